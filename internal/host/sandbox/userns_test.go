package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/podhost/podhost/internal/model/records"
)

// A hostUsers: false sandbox pins a user namespace owning its net, IPC and
// UTS namespaces, with the pod's hostname; IDMapped shows a host dir and
// file through it (root-owned on disk, owned by the range's first id as
// the host sees the mount); Remove unmounts everything.
func TestUserNSSandbox(t *testing.T) {
	needRoot(t)
	m, runDir := testManager(t)
	ctx := context.Background()
	pod := testPod("web")
	uns := &records.UserNSRecord{UID: pod.UID, HostID: 7 << 16, Size: 1 << 16}
	p, err := m.Create(ctx, "sbu", pod, uns)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{p.User, p.NetNS, p.IPC, p.UTS} {
		if !Exists(path) {
			t.Errorf("%q is not a pinned namespace", path)
		}
	}
	if filepath.Dir(p.NetNS) != filepath.Join(runDir, "netns", "sbu") {
		t.Errorf("netns %s not in the sandbox's netns dir", p.NetNS)
	}
	// The namespaces belong to the pod's user namespace: its parent is ours.
	for _, path := range []string{p.NetNS, p.IPC, p.UTS} {
		if owner := ownerOf(t, path); owner != inode(t, p.User) {
			t.Errorf("%s is owned by user namespace inode %d, want the pod's %d", path, owner, inode(t, p.User))
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{dir, file} {
		got, err := m.IDMapped(p, src)
		if err != nil {
			t.Fatalf("IDMapped(%s): %v", src, err)
		}
		var st unix.Stat_t
		if err := unix.Stat(got, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != uns.HostID || st.Gid != uns.HostID {
			t.Errorf("%s through the idmapped mount: owner %d:%d, want %d:%d", src, st.Uid, st.Gid, uns.HostID, uns.HostID)
		}
		again, err := m.IDMapped(p, src)
		if err != nil || again != got {
			t.Errorf("IDMapped(%s) again = %s, %v; want the same mount %s", src, again, err, got)
		}
	}
	if err := m.Remove(ctx, p); err != nil {
		t.Fatal(err)
	}
	assertGone(t, p)
}

// ownerOf returns the inode of the user namespace owning the namespace
// pinned at path (NS_GET_USERNS).
func ownerOf(t *testing.T, path string) uint64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		t.Fatalf("NS_GET_USERNS %s: %v", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// This host (Linux 6.x, ext4, tmpfs) can: the check says what it checked
// and leaves nothing behind. A filesystem without idmapped mounts is named
// in the error.
func TestCheckUserNS(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	got, err := CheckUserNS(filepath.Join(dir, "not", "yet"))
	if err != nil {
		t.Fatalf("CheckUserNS: %v", err)
	}
	if !strings.Contains(got, "("+dir+")") || !strings.HasSuffix(got, ", tmpfs") {
		t.Errorf("checked %q: want the dir's filesystem and tmpfs", got)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	assertNoMounts(t, dir)
	// ramfs has no idmapped mounts.
	ramfs := t.TempDir()
	if err := unix.Mount("ramfs", ramfs, "ramfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Unmount(ramfs, unix.MNT_DETACH) }()
	_, err = CheckUserNS(dir, ramfs)
	if err == nil || !strings.Contains(err.Error(), "no idmapped mounts on ramfs ("+ramfs+")") {
		t.Errorf("CheckUserNS on ramfs: %v", err)
	}
}
