package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (namespaces and mounts)")
	}
}

func testManager(t *testing.T) (*Manager, string) {
	t.Helper()
	runDir := t.TempDir()
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewManager(runDir, WithHostResolvConf(resolv))
	t.Cleanup(func() { assertNoMounts(t, runDir) })
	return m, runDir
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "u1"}}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return st.Ino
}

func assertNoMounts(t *testing.T, dir string) {
	t.Helper()
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		t.Errorf("left mounted: %s (%s)", m.Mountpoint, m.FSType)
		_ = unix.Unmount(m.Mountpoint, unix.MNT_DETACH)
	}
}

// utsHostname reads the hostname inside a pinned UTS namespace from a
// thread that is never unlocked (it dies with its goroutine).
func utsHostname(t *testing.T, path string) string {
	t.Helper()
	type res struct {
		name string
		err  error
	}
	var r res
	r.err = onThrowawayThread(func() error {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWUTS); err != nil {
			return err
		}
		var u unix.Utsname
		err = unix.Uname(&u)
		r.name = unix.ByteSliceToString(u.Nodename[:])
		return err
	})
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.name
}

func TestCreateRemove(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	m, runDir := testManager(t)
	pod := testPod("web")
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.1.1", Hostnames: []string{"db"}}}
	p, err := m.Create(ctx, "sb1", pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Dir != filepath.Join(runDir, "sandboxes", "sb1") || !strings.HasPrefix(p.NetNS, filepath.Join(runDir, "netns", "sb1")+"/cni-") || m.Dir("sb1") != p.Dir {
		t.Fatalf("paths = %+v", p)
	}
	if fi, err := os.Stat(p.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode: %v %v", fi.Mode(), err)
	}
	for kind, path := range map[string]string{"net": p.NetNS, "ipc": p.IPC, "uts": p.UTS} {
		if !Exists(path) {
			t.Errorf("%s: %s is not an nsfs mount", kind, path)
		}
		if inode(t, path) == inode(t, "/proc/self/ns/"+kind) {
			t.Errorf("%s namespace is the host's", kind)
		}
	}
	if got := utsHostname(t, p.UTS); got != "web" {
		t.Errorf("hostname in uts ns = %q", got)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(p.Shm, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Errorf("shm is not a tmpfs: %v", err)
	}
	if got := readFile(t, p.Resolv); got != "nameserver 192.0.2.53\n" {
		t.Errorf("resolv.conf = %q", got)
	}
	if got := readFile(t, p.Hostname); got != "web\n" {
		t.Errorf("hostname = %q", got)
	}
	if err := m.WriteHosts(p, pod, []string{"10.89.0.7"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p.Hosts); !strings.Contains(got, "10.89.0.7\tweb\n") || !strings.Contains(got, "10.1.1.1\tdb\n") {
		t.Errorf("hosts = %q", got)
	}
	for i := 0; i < 2; i++ {
		if err := m.Remove(ctx, p); err != nil {
			t.Fatalf("Remove #%d: %v", i+1, err)
		}
	}
	assertGone(t, p)
	if Exists(p.NetNS) || Exists(p.IPC) {
		t.Error("Exists after Remove")
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func assertGone(t *testing.T, p Paths) {
	t.Helper()
	for _, path := range []string{p.Dir, p.NetNS} {
		if path == "" {
			continue
		}
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (err=%v)", path, err)
		}
	}
	assertNoMounts(t, filepath.Dir(filepath.Dir(p.Dir)))
}

// Knowing only Dir(id) — what a caller records before Create — Remove
// finds everything Create made: what a crash in the middle of Create leaves
// must be removable.
func TestRemoveByDirAlone(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	m, runDir := testManager(t)
	p, err := m.Create(ctx, "sb3", testPod("web"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, Paths{Dir: m.Dir("sb3")}); err != nil {
		t.Fatal(err)
	}
	assertGone(t, p)
	assertEmptyDir(t, filepath.Join(runDir, "netns"))
}

func TestHostNamespaces(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	m, _ := testManager(t)
	pod := testPod("hostnet")
	pod.Spec.HostNetwork, pod.Spec.HostIPC = true, true
	p, err := m.Create(ctx, "sb2", pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.NetNS != "" || p.UTS != "" || p.IPC != "" || p.Shm != "" {
		t.Errorf("host namespaces must be empty paths: %+v", p)
	}
	host, _ := os.Hostname()
	if got := readFile(t, p.Hostname); got != host+"\n" {
		t.Errorf("hostname = %q, want the host's", got)
	}
	hostHosts, _ := os.ReadFile("/etc/hosts")
	if got := readFile(t, p.Hosts); got != "# Kubernetes-managed hosts file (host network).\n"+string(hostHosts) {
		t.Errorf("hosts = %q, want the kubelet's header and the host's", got)
	}
	if err := m.Remove(ctx, p); err != nil {
		t.Fatal(err)
	}
	assertGone(t, p)

	// hostNetwork alone still gets a private IPC namespace and shm.
	pod.Spec.HostIPC = false
	p, err = m.Create(ctx, "sb3", pod, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !Exists(p.IPC) || p.UTS != "" || p.Shm == "" {
		t.Errorf("paths = %+v", p)
	}
	if err := m.Remove(ctx, p); err != nil {
		t.Fatal(err)
	}
	assertGone(t, p)
}

func TestCreateRollback(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	for _, step := range []string{"dir", "netns", "ipcuts", "shm", "files"} {
		t.Run(step, func(t *testing.T) {
			m, runDir := testManager(t)
			boom := errors.New("injected")
			m.failAt = func(s string) error {
				if s == step {
					return boom
				}
				return nil
			}
			if _, err := m.Create(ctx, "sb", testPod("web"), nil); !errors.Is(err, boom) {
				t.Fatalf("err = %v, want injected", err)
			}
			assertEmptyDir(t, filepath.Join(runDir, "sandboxes"))
			assertEmptyDir(t, filepath.Join(runDir, "netns"))
		})
	}
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
	}
}

func TestCreateRejects(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	m, _ := testManager(t)
	for _, id := range []string{"", "a/b", ".."} {
		if _, err := m.Create(ctx, id, testPod("x"), nil); err == nil {
			t.Errorf("Create(%q) must fail", id)
		}
	}
	p, err := m.Create(ctx, "dup", testPod("x"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, "dup", testPod("x"), nil); err == nil {
		t.Error("Create with an existing id must fail")
	}
	if _, err := os.Stat(p.Dir); err != nil {
		t.Errorf("failed duplicate Create must not touch the existing sandbox: %v", err)
	}
	if err := m.Remove(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, Paths{Dir: "/etc"}); err == nil {
		t.Error("Remove of a non-sandbox dir must fail")
	}
	if err := m.Remove(ctx, Paths{}); err != nil {
		t.Errorf("Remove of empty paths: %v", err)
	}
}

func TestExistsAfterUnmount(t *testing.T) {
	needRoot(t)
	m, _ := testManager(t)
	p, err := m.Create(context.Background(), "sb", testPod("web"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate what a reboot leaves: a plain file (or nothing) at the path.
	if err := unix.Unmount(p.IPC, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if Exists(p.IPC) {
		t.Error("Exists on an unmounted file")
	}
	if Exists(filepath.Join(p.Dir, "missing")) {
		t.Error("Exists on a missing file")
	}
	if err := m.Remove(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	assertGone(t, p)
}
