package shimgroup

import (
	"fmt"
	"testing"
)

func TestAssign(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		seed   map[string]string // sandbox → group, added first
		assign []string
		want   []string
	}{
		{"size 1: own group", 1, nil, []string{"a", "b"}, []string{"a", "b"}},
		{"fills group 0 first", 3, nil, []string{"a", "b", "c", "d"},
			[]string{"podhost-shim-0", "podhost-shim-0", "podhost-shim-0", "podhost-shim-1"}},
		{"same sandbox same group", 2, nil, []string{"a", "a", "b"},
			[]string{"podhost-shim-0", "podhost-shim-0", "podhost-shim-0"}},
		{"fullest group with room wins", 3,
			map[string]string{"x": "podhost-shim-0", "y": "podhost-shim-2", "z": "podhost-shim-2"},
			[]string{"a", "b"}, []string{"podhost-shim-2", "podhost-shim-0"}},
		{"tie: lowest index", 3,
			map[string]string{"x": "podhost-shim-4", "y": "podhost-shim-1"},
			[]string{"a"}, []string{"podhost-shim-1"}},
		{"all full: lowest free index", 1 + 1,
			map[string]string{"x": "podhost-shim-0", "y": "podhost-shim-0", "z": "podhost-shim-2", "w": "podhost-shim-2"},
			[]string{"a"}, []string{"podhost-shim-1"}},
		{"foreign names are not joined", 3,
			map[string]string{"x": "sandbox-x"}, []string{"a"}, []string{"podhost-shim-0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(tt.size)
			for id, group := range tt.seed {
				g.Add(id, group)
			}
			for i, id := range tt.assign {
				if got := g.Assign(id); got != tt.want[i] {
					t.Fatalf("Assign(%q) #%d = %q, want %q", id, i, got, tt.want[i])
				}
			}
		})
	}
}

func TestReleaseFreesRoom(t *testing.T) {
	g := New(2)
	a, b := g.Assign("a"), g.Assign("b")
	if a != b {
		t.Fatalf("a in %q, b in %q: want one group", a, b)
	}
	if c := g.Assign("c"); c == a {
		t.Fatalf("c joined the full group %q", a)
	}
	g.Release("a")
	g.Release("a") // twice is fine
	if d := g.Assign("d"); d != b {
		t.Fatalf("d in %q, want %q (room freed by a)", d, b)
	}
	if n := g.n[b]; n != 2 {
		t.Fatalf("%q has %d members, want 2", b, n)
	}
}

func TestAddMoves(t *testing.T) {
	g := New(4)
	g.Add("a", "podhost-shim-0")
	g.Add("a", "podhost-shim-1")
	if g.n["podhost-shim-0"] != 0 || g.n["podhost-shim-1"] != 1 {
		t.Fatalf("members 0=%d 1=%d, want 0 and 1", g.n["podhost-shim-0"], g.n["podhost-shim-1"])
	}
}

func TestNeverOverfills(t *testing.T) {
	g := New(3)
	for i := 0; i < 100; i++ {
		g.Assign(fmt.Sprint(i))
		if i%7 == 0 { // churn
			g.Release(fmt.Sprint(i / 2))
		}
		for group, n := range g.n {
			if n > 3 {
				t.Fatalf("after %d: %s has %d members", i, group, n)
			}
		}
	}
	if len(g.of) == 0 {
		t.Fatal("no sandbox assigned")
	}
}
