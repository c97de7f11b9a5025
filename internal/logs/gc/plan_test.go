package gc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// f builds a file of pod dir "p", container c, restart r, rotation rot,
// size sz, modified at t0+age minutes.
func f(c string, r, rot int, sz int64, age int) File {
	name := filepath.Join("p", c, itoa(r)+".log")
	if rot > 0 {
		name += "." + itoa(rot)
	}
	return File{Path: name, Container: c, Restart: r, Rotation: rot, Size: sz, ModTime: t0.Add(time.Duration(age) * time.Minute)}
}

func itoa(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

func TestPlan(t *testing.T) {
	tests := []struct {
		name      string
		dirs      []PodDir
		active    []string
		policy    Policy
		wantDirs  []string
		wantFiles []string
	}{
		{
			name:     "pod gone: whole dir",
			dirs:     []PodDir{{Path: "gone", UID: "u1"}, {Path: "kept", UID: "u2"}},
			active:   []string{"u2"},
			wantDirs: []string{"gone"},
		},
		{
			name: "two newest restarts kept per container",
			dirs: []PodDir{{Path: "p", UID: "u", Files: []File{
				f("a", 0, 0, 1, 0), f("a", 1, 0, 1, 1), f("a", 1, 1, 1, 1), f("a", 2, 0, 1, 2), f("a", 3, 0, 1, 3),
				f("b", 0, 0, 1, 0),
			}}},
			active:    []string{"u"},
			wantFiles: []string{"p/a/00.log", "p/a/01.log", "p/a/01.log.01"},
		},
		{
			name: "rotations beyond MaxFiles",
			dirs: []PodDir{{Path: "p", UID: "u", Files: []File{
				f("a", 0, 0, 1, 0), f("a", 0, 1, 1, 0), f("a", 0, 2, 1, 0), f("a", 0, 3, 1, 0),
			}}},
			active:    []string{"u"},
			policy:    Policy{MaxFiles: 2},
			wantFiles: []string{"p/a/00.log.03"},
		},
		{
			name: "under the cap: nothing more",
			dirs: []PodDir{{Path: "p", UID: "u", Files: []File{
				f("a", 0, 0, 10, 0), f("a", 1, 0, 10, 1),
			}}},
			active: []string{"u"},
			policy: Policy{MaxTotal: 20},
		},
		{
			name: "over the cap: oldest first, live file of the current instance never",
			dirs: []PodDir{{Path: "p", UID: "u", Files: []File{
				f("a", 4, 0, 100, 0), // current instance, oldest by mtime: protected
				f("a", 4, 1, 10, 2),
				f("a", 3, 0, 10, 1),
				f("b", 0, 0, 10, 5),
			}}},
			active:    []string{"u"},
			policy:    Policy{MaxTotal: 115},
			wantFiles: []string{"p/a/03.log", "p/a/04.log.01"},
		},
		{
			name: "cap unreachable: every live file stays",
			dirs: []PodDir{{Path: "p", UID: "u", Files: []File{
				f("a", 0, 0, 100, 0), f("b", 0, 0, 100, 1),
			}}},
			active: []string{"u"},
			policy: Policy{MaxTotal: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dirs, files := Plan(tt.dirs, func(uid string) bool { return slices.Contains(tt.active, uid) }, tt.policy)
			slices.Sort(files)
			if !slices.Equal(dirs, tt.wantDirs) {
				t.Errorf("dirs = %v, want %v", dirs, tt.wantDirs)
			}
			if !slices.Equal(files, tt.wantFiles) {
				t.Errorf("files = %v, want %v", files, tt.wantFiles)
			}
		})
	}
}

func TestParseName(t *testing.T) {
	tests := []struct {
		in     string
		r, rot int
		ok     bool
	}{
		{"0.log", 0, 0, true},
		{"12.log", 12, 0, true},
		{"3.log.2", 3, 2, true},
		{"3.log.0", 0, 0, false},
		{"x.log", 0, 0, false},
		{"3.log2", 0, 0, false},
		{"3.txt", 0, 0, false},
		{"-1.log", 0, 0, false},
	}
	for _, tt := range tests {
		r, rot, ok := parseName(tt.in)
		if r != tt.r || rot != tt.rot || ok != tt.ok {
			t.Errorf("parseName(%q) = %d, %d, %v; want %d, %d, %v", tt.in, r, rot, ok, tt.r, tt.rot, tt.ok)
		}
	}
}

func TestCollect(t *testing.T) {
	root := t.TempDir()
	write := func(rel string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{
		"default_gone_u1/c/0.log", "default_web_u2/c/0.log", "default_web_u2/c/1.log",
		"default_web_u2/c/2.log", "default_web_u2/c/notes.txt", "not-a-pod/c/0.log",
	} {
		write(rel)
	}
	c := &Collector{Root: root}
	if err := c.Collect(t.Context(), func(uid types.UID) bool { return uid == "u2" }); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{
		"default_gone_u1": false, "default_web_u2/c/0.log": false, "default_web_u2/c/1.log": true,
		"default_web_u2/c/2.log": true, "default_web_u2/c/notes.txt": true, "not-a-pod/c/0.log": true,
	} {
		_, err := os.Stat(filepath.Join(root, rel))
		if got := err == nil; got != want {
			t.Errorf("%s exists = %v, want %v", rel, got, want)
		}
	}
}
