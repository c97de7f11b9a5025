package daemon

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestStdinWritersPrunedWhenNoOneReads: the writer of a container's stdin
// FIFO is closed once no shim reads it (the container stopped between
// attaches), at the next first attach of any container.
func TestStdinWritersPrunedWhenNoOneReads(t *testing.T) {
	dir := t.TempDir()
	fifo := func(name string) (string, *os.File) {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0) // the shim's end
		if err != nil {
			t.Fatal(err)
		}
		return p, r
	}
	var w stdinWriters
	pa, ra := fifo("a")
	if _, err := w.open("a", pa); err != nil {
		t.Fatal(err)
	}
	pb, rb := fifo("b")
	defer rb.Close()
	if _, err := w.open("b", pb); err != nil {
		t.Fatal(err)
	}
	if len(w.files) != 2 {
		t.Fatalf("writers %v, want a and b (both read)", w.files)
	}
	ra.Close() // container a stopped
	pc, rc := fifo("c")
	defer rc.Close()
	if _, err := w.open("c", pc); err != nil {
		t.Fatal(err)
	}
	if _, kept := w.files["a"]; kept || len(w.files) != 2 {
		t.Errorf("writers %v: a's should be closed, b's and c's kept", w.files)
	}
}
