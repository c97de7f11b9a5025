package volumes

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/podhost/podhost/internal/desired/configdata"
)

func readVol(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteAtomicLayout(t *testing.T) {
	dir := t.TempDir()
	p1 := map[string]configdata.File{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o400}}
	if err := WriteAtomic(dir, p1, nil); err != nil {
		t.Fatal(err)
	}
	ts, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil || !strings.HasPrefix(ts, "..") {
		t.Fatalf("..data -> %q, %v", ts, err)
	}
	for name, want := range map[string]string{"a": "..data/a", "sub": "..data/sub"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s -> %q, %v; want %q", name, got, err, want)
		}
	}
	if readVol(t, dir, "sub/b") != "2" {
		t.Error("sub/b")
	}
	if fi, _ := os.Stat(filepath.Join(dir, "sub/b")); fi.Mode().Perm() != 0o400 {
		t.Errorf("mode %v", fi.Mode())
	}
	// Same payload: nothing rewritten.
	if err := WriteAtomic(dir, p1, nil); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != ts {
		t.Errorf("unchanged payload rewrote the dir: %s -> %s", ts, again)
	}
	// New payload: new dir, stale name removed, old dir gone.
	if err := WriteAtomic(dir, map[string]configdata.File{"a": {Data: []byte("3"), Mode: 0o644}}, nil); err != nil {
		t.Fatal(err)
	}
	if readVol(t, dir, "a") != "3" {
		t.Error("a not updated")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 3 || names[len(names)-1] != "a" { // ..<ts>, ..data, a
		t.Errorf("entries %v", names)
	}
	if _, err := os.Stat(filepath.Join(dir, ts)); !os.IsNotExist(err) {
		t.Errorf("old payload dir still there: %v", err)
	}
	gid := int64(1234)
	if err := WriteAtomic(dir, map[string]configdata.File{"a": {Data: []byte("3"), Mode: 0o400}}, &gid); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a")); fi.Mode().Perm() != 0o440 {
		t.Errorf("fsGroup mode %v, want 0440", fi.Mode())
	}
	for _, bad := range []string{"../x", "/abs", "..x", "a/../../b"} {
		if err := WriteAtomic(dir, map[string]configdata.File{bad: {}}, nil); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
}

// A reader that resolves ..data once never sees two keys from different
// payloads, whatever the interleaving with updates.
func TestWriteAtomicReadersNeverMix(t *testing.T) {
	dir := t.TempDir()
	write := func(v string) {
		if err := WriteAtomic(dir, map[string]configdata.File{"x": {Data: []byte(v), Mode: 0o644}, "y": {Data: []byte(v), Mode: 0o644}}, nil); err != nil {
			t.Error(err)
		}
	}
	write("0")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mismatches, reads int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ts, err := os.Readlink(filepath.Join(dir, "..data"))
			if err != nil {
				continue
			}
			x, errX := os.ReadFile(filepath.Join(dir, ts, "x"))
			y, errY := os.ReadFile(filepath.Join(dir, ts, "y"))
			if errX != nil || errY != nil {
				continue // the old dir went away meanwhile: read again
			}
			reads++
			if string(x) != string(y) {
				mismatches++
			}
		}
	}()
	for i := range 300 {
		write(strings.Repeat("v", i%7+1) + string(rune('a'+i%26)))
	}
	close(stop)
	wg.Wait()
	if mismatches > 0 || reads == 0 {
		t.Errorf("%d mismatched reads of %d", mismatches, reads)
	}
}
