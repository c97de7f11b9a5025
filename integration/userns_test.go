//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// usernsPod is a pod with hostUsers: false: an emptyDir, a configMap
// (mode 0600: root-only) and a hostPath dir holding a root-only file.
func usernsPod(name, hostDir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %[1]s-cfg
data:
  greeting: hello
---
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 1
  volumes:
  - name: scratch
    emptyDir: {}
  - name: cfg
    configMap:
      name: %[1]s-cfg
      defaultMode: 0600
  - name: host
    hostPath:
      path: %[2]s
  containers:
  - name: main
    image: %[3]s
    command: [sleep, "3600"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: cfg, mountPath: /cfg}
    - {name: host, mountPath: /host}
`, name, hostDir, env.ImageRef)
}

// idMap reads /proc/<pid>/<file> (uid_map, gid_map) on the host: the
// fields of its one line.
func idMap(t *testing.T, pid uint32, file string) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 1 {
		t.Fatalf("/proc/%d/%s: %q, want one mapping", pid, file, b)
	}
	return strings.Fields(lines[0])
}

// podRange checks, from the host, that the pod's container runs in a user
// namespace mapping 0 → H for 65536 uids and gids, with H a multiple of
// 65536 from 65536 up, and that the host sees its root as uid H; it
// returns H.
func podRange(t *testing.T, uid, container string) uint64 {
	t.Helper()
	pid := taskPID(t, uid, container)
	m := idMap(t, pid, "uid_map")
	if m[0] != "0" || m[2] != "65536" {
		t.Fatalf("uid_map of %s: %v, want 0 <H> 65536 (not the host's 0 0 4294967295)", container, m)
	}
	if g := idMap(t, pid, "gid_map"); strings.Join(g, " ") != strings.Join(m, " ") {
		t.Errorf("gid_map %v, want the uid_map %v", g, m)
	}
	h, err := strconv.ParseUint(m[1], 10, 32)
	if err != nil || h < 65536 || h%65536 != 0 {
		t.Fatalf("host id %q: want a multiple of 65536, at least 65536", m[1])
	}
	if got, want := procStatus(t, pid, "Uid"), strings.Repeat(m[1]+"\t", 3)+m[1]; got != want {
		t.Errorf("host Uid line of %s: %q, want %q (container root is host uid %d)", container, got, want, h)
	}
	return h
}

// TestUserNamespaces: pods with hostUsers: false get disjoint ranges of
// 65536 ids (checked on the host: uid_map, the Uid line); inside, root is
// uid 0 and the volumes are mounted idmapped: the emptyDir is writable, the
// root-only configMap file and hostPath file are readable and owned by
// root. The range survives kill -9 of the daemon (a new container of the
// pod after the restart gets it, a new pod does not), a deleted pod's
// range goes to the next pod, and a lost state db gets the ranges back from
// the containers.
func TestUserNamespaces(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "secret"), []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("a.yaml", usernsPod("uns-a", hostDir))
	a := d.waitRunning("uns-a")
	d.writeManifest("b.yaml", usernsPod("uns-b", hostDir))
	b := d.waitRunning("uns-b")
	ha, hb := podRange(t, string(a.UID), "main"), podRange(t, string(b.UID), "main")
	if ha == hb {
		t.Fatalf("both pods got host id %d", ha)
	}
	checkEmptyDirMethods(t, d, 2)

	if out, errOut, code := d.execCLI("", "uns-a", "--", "id", "-u"); code != 0 || strings.TrimSpace(out) != "0" {
		t.Fatalf("id -u in the pod: exit %d %q %s, want 0", code, out, errOut)
	}
	script := "echo data > /scratch/f && cat /scratch/f && stat -c '%u:%g' /scratch/f && " +
		"cat /cfg/greeting && echo && stat -L -c '%u:%g %a' /cfg/greeting && " +
		"cat /host/secret && echo && stat -c '%u:%g' /host/secret"
	out, errOut, code := d.execCLI("", "uns-a", "--", "sh", "-c", script)
	want := "data\n0:0\nhello\n0:0 600\ns3cret\n0:0\n"
	if code != 0 || out != want {
		t.Fatalf("volumes in the pod: exit %d\n%s%s\nwant\n%s", code, out, errOut, want)
	}
	// On the host, the file the pod's root wrote is root's (the mount maps
	// it), not uid H's.
	f := findFile(t, filepath.Join(d.stateDir, "pods", string(a.UID)), "f")
	var st syscall.Stat_t
	if err := syscall.Stat(f, &st); err != nil || st.Uid != 0 {
		t.Errorf("emptyDir file %s on the host: uid %d, %v; want 0", f, st.Uid, err)
	}

	// kill -9 and start: the range is remembered. A new container of
	// uns-a (its process killed) runs in the same range; a new pod gets
	// neither a's nor b's.
	d.kill(syscall.SIGKILL)
	d.start()
	old := taskPID(t, string(a.UID), "main")
	if err := syscall.Kill(int(old), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.waitPod("uns-a", 90*time.Second, "restarted", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 1 && cs.State.Running != nil
	})
	if h := podRange(t, string(a.UID), "main"); h != ha {
		t.Errorf("uns-a after a daemon restart: host id %d, want its %d", h, ha)
	}
	d.writeManifest("c.yaml", usernsPod("uns-c", hostDir))
	c := d.waitRunning("uns-c")
	hc := podRange(t, string(c.UID), "main")
	if hc == ha || hc == hb {
		t.Errorf("uns-c got host id %d, a range in use (a %d, b %d)", hc, ha, hb)
	}

	// Deleted, b's range is released and the next pod gets it (the lowest
	// free one).
	mark := d.logMark()
	d.removeManifest("b.yaml")
	d.waitPodGone(t, b)
	if err := waitFor(60*time.Second, func() (bool, error) {
		return strings.Contains(d.logsSince(mark), "user namespace range released"), nil
	}); err != nil {
		t.Fatalf("b's range not released: %v\n%s", err, d.logsSince(mark))
	}
	d.writeManifest("e.yaml", usernsPod("uns-e", hostDir))
	e := d.waitRunning("uns-e")
	if he := podRange(t, string(e.UID), "main"); he != hb {
		t.Errorf("uns-e got host id %d, want b's released %d (the lowest free)", he, hb)
	}

	// The state db lost (kill -9, file deleted): the ranges come back from
	// the containers' labels, so the next pod gets a free range, not one
	// of a, c or e (the lowest ones).
	d.kill(syscall.SIGKILL)
	if err := os.Remove(filepath.Join(d.stateDir, "state.db")); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.writeManifest("f.yaml", usernsPod("uns-f", hostDir))
	pf := d.waitRunning("uns-f")
	if hf := podRange(t, string(pf.UID), "main"); hf == ha || hf == hb || hf == hc {
		t.Errorf("uns-f got host id %d after the state db was rebuilt: a range in use (a %d, c %d, e %d)", hf, ha, hc, hb)
	}
	if h := podRange(t, string(a.UID), "main"); h != ha {
		t.Errorf("uns-a after the rebuild: host id %d, want %d", h, ha)
	}
}

// findFile returns the path of the file named name below dir.
func findFile(t *testing.T, dir, name string) string {
	t.Helper()
	var found string
	_ = filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() && de.Name() == name {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no %s below %s", name, dir)
	}
	return found
}

// TestUserNamespacesRefusedWithoutIDMap: with the state dir (the pods'
// volumes) on ramfs, which has no idmapped mounts, the daemon's start
// check fails and a hostUsers: false pod's sandbox is refused with the
// reason (FailedCreatePodSandBox, CreatePodSandboxError), as the kubelet
// refuses it on a runtime without user namespaces; nothing is made for it.
func TestUserNamespacesRefusedWithoutIDMap(t *testing.T) {
	ramfs := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(ramfs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("ramfs", ramfs, "ramfs", 0, "mode=0700"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(ramfs, syscall.MNT_DETACH) }) // after the daemon's teardown
	d := newPodhostd(t)
	d.stateDir = ramfs
	d.start()
	d.writeManifest("a.yaml", usernsPod("uns-r", t.TempDir()))
	want := "can't set spec.hostUsers: false: no idmapped mounts on ramfs (" + ramfs
	d.waitEvent("uns-r", "FailedCreatePodSandBox", want, 60*time.Second)
	p := d.waitPod("uns-r", 60*time.Second, "CreatePodSandboxError", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreatePodSandboxError"
	})
	if n := len(podContainers(t, string(p.UID))); n != 0 {
		t.Errorf("%d containers made for a refused pod", n)
	}
}
