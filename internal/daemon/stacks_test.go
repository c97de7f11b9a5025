package daemon

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestDumpStacks(t *testing.T) {
	dir := t.TempDir()
	path, err := dumpStacks(dir, time.Date(2026, 11, 24, 1, 2, 3, 4, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "TestDumpStacks") || !strings.HasPrefix(string(b), "goroutine ") {
		t.Fatalf("%s: no stack of this goroutine:\n%.300s", path, b)
	}
	if _, err := dumpStacks(dir+"/missing", time.Now()); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("dump into a missing dir: %v, want an error naming it", err)
	}
}
