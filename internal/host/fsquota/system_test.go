package fsquota

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/model/records"
)

// TestSystemPrjquota runs the real kernel calls on a directory of a
// filesystem mounted with project quotas, given by
// PODHOST_TEST_PRJQUOTA_DIR (this project's machines' kernel has no quota
// format, so it is run in a VM whose kernel has: see docs/eviction.md).
// Skipped without it.
func TestSystemPrjquota(t *testing.T) {
	root := os.Getenv("PODHOST_TEST_PRJQUOTA_DIR")
	if root == "" {
		t.Skip("PODHOST_TEST_PRJQUOTA_DIR (a directory on ext4 or XFS mounted prjquota) is not set")
	}
	k := System{}
	if err := k.Supported(root); err != nil {
		t.Fatalf("Supported(%s) = %v", root, err)
	}
	if err := k.Supported("/proc"); err == nil {
		t.Error("Supported(/proc) = nil")
	}
	st := &memStore{recs: map[string]records.QuotaRecord{}}
	m, err := New(st, Options{Reserved: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "vol")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if got := m.Assign(userNSPod("a"), "v", dir); got != MethodQuota {
		t.Fatalf("Assign = %q", got)
	}
	id, inherit, err := k.Project(dir)
	if err != nil || id != FirstID || !inherit {
		t.Fatalf("Project = %d, %v, %v; want %d inherited", id, inherit, err, FirstID)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "big"), []byte(strings.Repeat("x", 3<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	if sub, _, err := k.Project(filepath.Join(dir, "a", "b")); err != nil || sub != id {
		t.Errorf("nested dir project %d, %v; want %d inherited", sub, err, id)
	}
	b, i, ok, err := m.Usage("uid-a", "v")
	t.Logf("project %d: %d bytes, %d inodes", id, b, i)
	if !ok || err != nil || b < 3<<20 || b > 4<<20 || i != 4 {
		t.Fatalf("Usage = %d bytes, %d inodes, %v, %v; want 3 MiB and 4 inodes (vol, a, b, big)", b, i, ok, err)
	}
	// A second volume gets the next ID; the first one's files do not count in it.
	dir2 := filepath.Join(root, "vol2")
	if err := os.Mkdir(dir2, 0o777); err != nil {
		t.Fatal(err)
	}
	if got := m.Assign(userNSPod("b"), "v", dir2); got != MethodQuota {
		t.Fatalf("second Assign = %q", got)
	}
	if b2, i2, ok, err := m.Usage("uid-b", "v"); !ok || err != nil || b2 > 64<<10 || i2 != 1 {
		t.Fatalf("second Usage = %d bytes, %d inodes, %v, %v; want only its directory", b2, i2, ok, err)
	}
	// A file moved across projects is refused (EXDEV), so it cannot leave the count.
	if err := os.Rename(filepath.Join(dir, "a", "b", "big"), filepath.Join(dir2, "big")); err == nil {
		t.Error("rename across project directories succeeded")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Release("uid-a"); err != nil || len(st.recs) != 1 {
		t.Fatalf("Release = %v, records %+v", err, st.recs)
	}
	if b, i, err := k.Usage(root, id); err != nil || b != 0 || i != 0 {
		t.Errorf("usage of released project %d: %d bytes, %d inodes, %v; want none", id, b, i, err)
	}
}
