package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const waitTimeout = 5 * time.Second

// harness runs a Source on a dir and observes its snapshots and syncs.
type harness struct {
	t      *testing.T
	dir    string
	out    chan Snapshot
	synced chan bool // one value per relist: whether it emitted
	done   chan error
}

func start(t *testing.T, dir string, tweak func(*Config)) *harness {
	t.Helper()
	cfg := Config{Dir: dir, Relist: time.Hour, Debounce: 100 * time.Millisecond}
	if tweak != nil {
		tweak(&cfg)
	}
	s := New(cfg)
	h := &harness{t: t, dir: dir, out: make(chan Snapshot), synced: make(chan bool, 1000), done: make(chan error, 1)}
	s.onSync = func(emitted bool) { h.synced <- emitted }
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.done <- s.Run(ctx, h.out) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitTimeout):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

// next waits for the next snapshot.
func (h *harness) next() Snapshot {
	h.t.Helper()
	select {
	case s := <-h.out:
		<-h.synced // the sync that emitted it
		return s
	case err := <-h.done:
		h.t.Fatalf("Run returned: %v", err)
	case <-time.After(waitTimeout):
		h.t.Fatal("no snapshot")
	}
	return Snapshot{}
}

// expect waits for one snapshot and checks its summary.
func (h *harness) expect(want string) Snapshot {
	h.t.Helper()
	s := h.next()
	if got := summary(s); got != want {
		h.t.Fatalf("snapshot = %q, want %q", got, want)
	}
	return s
}

// noSnapshot waits for the source to process the preceding changes (the
// next relist that emits nothing) and fails on any snapshot before it.
func (h *harness) noSnapshot() {
	h.t.Helper()
	for {
		select {
		case s := <-h.out:
			h.t.Fatalf("unexpected snapshot %q", summary(s))
		case emitted := <-h.synced:
			if !emitted {
				return
			}
		case <-time.After(waitTimeout):
			h.t.Fatal("no relist happened")
		}
	}
}

// barrier makes an event that changes nothing and asserts no snapshot comes
// before the relist it triggers: "exactly one snapshot per change".
func (h *harness) barrier() {
	h.t.Helper()
	writeFile(h.t, h.dir, ".barrier", time.Now().String())
	h.noSnapshot()
}

func rename(t *testing.T, dir, from, to string) {
	t.Helper()
	if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func TestRunEditorSaves(t *testing.T) {
	saves := map[string]func(t *testing.T, dir, content string){
		"write in place": func(t *testing.T, dir, content string) {
			writeFile(t, dir, "web.yaml", content)
		},
		"vim (backup + new file)": func(t *testing.T, dir, content string) {
			writeFile(t, dir, ".web.yaml.swp", "swap")
			writeFile(t, dir, "4913", "")
			remove(t, dir, "4913")
			rename(t, dir, "web.yaml", "web.yaml~")
			writeFile(t, dir, "web.yaml", content)
			remove(t, dir, "web.yaml~")
			remove(t, dir, ".web.yaml.swp")
		},
		"emacs (autosave + backup)": func(t *testing.T, dir, content string) {
			writeFile(t, dir, "#web.yaml#", content)
			rename(t, dir, "web.yaml", "web.yaml~")
			writeFile(t, dir, "web.yaml", content)
			remove(t, dir, "#web.yaml#")
		},
		"atomic rename from dot tmp": func(t *testing.T, dir, content string) {
			writeFile(t, dir, ".web.yaml.tmp", content)
			rename(t, dir, ".web.yaml.tmp", "web.yaml")
		},
		"atomic rename from .tmp": func(t *testing.T, dir, content string) {
			writeFile(t, dir, "web.yaml.tmp", content)
			rename(t, dir, "web.yaml.tmp", "web.yaml")
		},
		"delete + recreate": func(t *testing.T, dir, content string) {
			remove(t, dir, "web.yaml")
			writeFile(t, dir, "web.yaml", content)
		},
	}
	for name, save := range saves {
		t.Run(name, func(t *testing.T) {
			dir := secureDir(t)
			writeFile(t, dir, "web.yaml", podYAML("web", "img:1"))
			h := start(t, dir, nil)
			h.expect("default/web=img:1")

			save(t, dir, podYAML("web", "img:2"))
			h.expect("default/web=img:2")
			h.barrier()

			// The same save with the same content is no change at all.
			save(t, dir, podYAML("web", "img:2"))
			h.noSnapshot()
		})
	}
}

func TestRunNoOpTouches(t *testing.T) {
	dir := secureDir(t)
	p := writeFile(t, dir, "web.yaml", podYAML("web", "img:1"))
	h := start(t, dir, nil)
	h.expect("default/web=img:1")

	now := time.Now()
	if err := os.Chtimes(p, now, now); err != nil {
		t.Fatal(err)
	}
	h.noSnapshot()
	writeFile(t, dir, "web.yaml", podYAML("web", "img:1"))
	h.noSnapshot()
	chmod(t, p, 0o640)
	h.noSnapshot()
	writeFile(t, dir, "README.md", "not a manifest")
	writeFile(t, dir, "web.yaml.bak", podYAML("web", "img:bak"))
	h.noSnapshot()
}

func TestRunLifecycle(t *testing.T) {
	dir := secureDir(t)
	h := start(t, dir, nil)
	h.expect("") // a snapshot after start, even when empty

	writeFile(t, dir, "a.yaml", podYAML("a", "img:1"))
	h.expect("default/a=img:1")
	h.barrier()

	// A burst of many files is at most two snapshots: the first finished
	// file is read at once (landed.go), the rest after the debounce.
	for i := range 30 {
		writeFile(t, dir, fmt.Sprintf("p%02d.yaml", i), podYAML(fmt.Sprintf("p%02d", i), "img:1"))
	}
	s := h.next()
	if len(s.Pods) != 31 {
		s = h.next()
	}
	if len(s.Pods) != 31 {
		t.Fatalf("burst: %d pods after two snapshots, want 31", len(s.Pods))
	}
	h.barrier()
	for i := range 30 {
		remove(t, dir, fmt.Sprintf("p%02d.yaml", i))
	}
	h.expect("default/a=img:1")

	// Invalid: the last good version is kept and flagged; fixing it is one change.
	writeFile(t, dir, "a.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c}]}\n")
	s = h.expect("default/a=img:1 ERR a.yaml kept=default/a")
	if !strings.Contains(s.Errors[0].Error(), "a.yaml: spec.containers[0].image: Required value") {
		t.Errorf("error = %q", s.Errors[0].Error())
	}
	h.barrier()
	writeFile(t, dir, "a.yaml", podYAML("a", "img:3"))
	h.expect("default/a=img:3")

	// Duplicate in a later file.
	writeFile(t, dir, "b.yaml", podYAML("a", "img:b"))
	h.expect("default/a=img:3 ERR b.yaml")
	remove(t, dir, "b.yaml")
	h.expect("default/a=img:3")

	remove(t, dir, "a.yaml")
	h.expect("")
	h.barrier()
}

func TestRunPermissions(t *testing.T) {
	dir := secureDir(t)
	p := writeFile(t, dir, "a.yaml", podYAML("a", "img:1"))
	h := start(t, dir, nil)
	h.expect("default/a=img:1")
	chmod(t, p, 0o666)
	h.expect("default/a=img:1 ERR a.yaml kept=default/a")
	chmod(t, p, 0o644)
	h.expect("default/a=img:1")
}

func TestRunAllowInsecure(t *testing.T) {
	dir := secureDir(t)
	chmod(t, dir, 0o777)
	p := writeFile(t, dir, "a.yaml", podYAML("a", "img:1"))
	chmod(t, p, 0o666)
	h := start(t, dir, func(c *Config) { c.AllowInsecure = true })
	h.expect("default/a=img:1")
}

func TestRunRefusesInsecureDir(t *testing.T) {
	dir := secureDir(t)
	chmod(t, dir, 0o777)
	s := New(Config{Dir: dir})
	err := s.Run(context.Background(), make(chan Snapshot, 1))
	if !errors.Is(err, ErrInsecure) {
		t.Fatalf("Run = %v, want ErrInsecure", err)
	}
}

func TestRunMissingDir(t *testing.T) {
	parent := secureDir(t)
	dir := filepath.Join(parent, "manifests")
	h := start(t, dir, func(c *Config) { c.Relist = 50 * time.Millisecond })
	h.expect("ERR manifests")
	staging := filepath.Join(parent, "staging")
	if err := os.Mkdir(staging, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, staging, "a.yaml", podYAML("a", "img:1"))
	if err := os.Rename(staging, dir); err != nil {
		t.Fatal(err)
	}
	h.expect("default/a=img:1")
	// Now watched: the event path works (relist is frequent here, so
	// only check the content).
	writeFile(t, dir, "a.yaml", podYAML("a", "img:2"))
	h.expect("default/a=img:2")
}
