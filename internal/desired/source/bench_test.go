package source

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func benchDir(b *testing.B, n int) string {
	b.Helper()
	dir := secureDir(b)
	for i := range n {
		writeFile(b, dir, fmt.Sprintf("pod-%04d.yaml", i), podYAML(fmt.Sprintf("pod-%04d", i), "registry.local/app:1"))
	}
	return dir
}

// BenchmarkScan1000 is one full, stateless read of 1000 manifests (what
// apply, delete and check do): read, decode, validate, hash every file.
func BenchmarkScan1000(b *testing.B) {
	dir := benchDir(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		snap, err := Scan(dir, false)
		if err != nil || len(snap.Pods) != 1000 {
			b.Fatalf("scan: %d pods, %v", len(snap.Pods), err)
		}
	}
}

// BenchmarkRelist1000 is the Source's relist of 1000 unchanged manifests
// (every debounced burst and every Relist period): files are read and
// compared, nothing is decoded again.
func BenchmarkRelist1000(b *testing.B) {
	dir := benchDir(b, 1000)
	sc := newScanner(dir, false)
	if _, err := sc.scan(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		snap, err := sc.scan()
		if err != nil || len(snap.Pods) != 1000 {
			b.Fatalf("scan: %d pods, %v", len(snap.Pods), err)
		}
		_ = snap.key()
	}
}

// BenchmarkFloorRead1000 is the floor for the two above: list the dir and
// read the 1000 files, nothing else. Compare ratios, not absolute times.
func BenchmarkFloorRead1000(b *testing.B) {
	dir := benchDir(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		entries, err := os.ReadDir(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range entries {
			if _, err := os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
				b.Fatal(err)
			}
		}
	}
}
