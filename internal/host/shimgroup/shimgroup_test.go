package shimgroup

import (
	"fmt"
	"testing"
)

func TestAssign(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		seed   [][2]string // sandbox, group: added first, in order
		assign []string
		want   []string
	}{
		{"size 1: own group", 1, nil, []string{"a", "b"}, []string{"a", "b"}},
		{"fills the first group first", 3, nil, []string{"a", "b", "c", "d"},
			[]string{"podhost-shim-a", "podhost-shim-a", "podhost-shim-a", "podhost-shim-d"}},
		{"same sandbox same group", 2, nil, []string{"a", "a", "b"},
			[]string{"podhost-shim-a", "podhost-shim-a", "podhost-shim-a"}},
		{"fullest group with room wins", 3,
			[][2]string{{"x", "podhost-shim-x"}, {"y", "podhost-shim-y"}, {"z", "podhost-shim-y"}},
			[]string{"a", "b"}, []string{"podhost-shim-y", "podhost-shim-x"}},
		{"tie: the older group", 3,
			[][2]string{{"x", "podhost-shim-x"}, {"y", "podhost-shim-y"}},
			[]string{"a"}, []string{"podhost-shim-x"}},
		{"recorded names from before are joined", 2,
			[][2]string{{"x", "podhost-shim-4"}}, []string{"a", "b"}, []string{"podhost-shim-4", "podhost-shim-b"}},
		{"all full: a new group", 2,
			[][2]string{{"x", "podhost-shim-0"}, {"y", "podhost-shim-0"}},
			[]string{"a"}, []string{"podhost-shim-a"}},
		{"foreign names are not joined", 3,
			[][2]string{{"x", "sandbox-x"}}, []string{"a"}, []string{"podhost-shim-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New(tt.size)
			for _, sg := range tt.seed {
				g.Add(sg[0], sg[1])
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

// A group that emptied is never named again: a new sandbox opens a group of
// a new name, so containerd starts a new shim for it rather than reaching
// whatever still answers at the old name's socket.
func TestEmptiedGroupNameNotReused(t *testing.T) {
	g := New(2)
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		id := fmt.Sprint("sb", i)
		group := g.Assign(id)
		if i%2 == 0 && seen[group] {
			t.Fatalf("sandbox %s opened group %q, used before", id, group)
		}
		seen[group] = true
		if i%2 == 1 { // the group is full: empty it
			g.Release(id)
			g.Release(fmt.Sprint("sb", i-1))
		}
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
