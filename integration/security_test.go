//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/apparmor"
	corev1 "k8s.io/api/core/v1"
)

// TestSecurityContextAndVolumes runs a locked-down container with real runc:
// non-root user, read-only rootfs, no capabilities, no privilege escalation;
// an emptyDir on tmpfs and a hostPath created on demand are writable, the
// rootfs is not, and env/downward API values arrive.
func TestSecurityContextAndVolumes(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	hostDir := filepath.Join(d.dir, "host-data")
	d.writeManifest("locked.yaml", podManifest("locked", fmt.Sprintf(`  restartPolicy: Never
  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    supplementalGroups: [4000]
  volumes:
  - name: scratch
    emptyDir: {medium: Memory, sizeLimit: 8Mi}
  - name: data
    hostPath: {path: %s, type: DirectoryOrCreate}
  containers:
  - name: main
    image: %s
    env:
    - {name: GREETING, value: hello}
    - {name: MESSAGE, value: "$(GREETING) world"}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    command: ["sh", "-c"]
    args:
    - |
      echo "id=$(id -u):$(id -g) groups=$(id -G)"
      echo "msg=$MESSAGE pod=$POD_NAME ip=$POD_IP host=$(hostname)"
      touch /rootfs-write 2>/dev/null && echo rootfs=writable || echo rootfs=readonly
      echo ok > /scratch/f && echo scratch=ok
      mount | grep ' /scratch ' | grep -q tmpfs && echo scratch=tmpfs
      echo ok > /data/f 2>/dev/null && echo data=ok || echo data=denied
      grep CapEff /proc/self/status
      grep NoNewPrivs /proc/self/status
    securityContext:
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: data, mountPath: /data}
`, hostDir, env.ImageRef)))
	p, out := finishedLog(t, d, "locked", "NoNewPrivs")
	for _, want := range []string{
		"id=1000:3000", "4000", "msg=hello world pod=locked ip=" + p.Status.PodIP, "host=locked",
		"rootfs=readonly", "scratch=ok", "scratch=tmpfs",
		"CapEff:\t0000000000000000", "NoNewPrivs:\t1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// hostPath DirectoryOrCreate made the dir (root-owned 0755: uid 1000 may
	// not write, as on any kubelet).
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() {
		t.Fatalf("hostPath dir not created: %v", err)
	}
	if !strings.Contains(out, "data=denied") {
		t.Errorf("non-root wrote into a root-owned hostPath:\n%s", out)
	}
}

// finishedLog waits until pod name has finished and returns it with the log
// of its container main, once the log holds last.
func finishedLog(t *testing.T, d *podhostd, name, last string) (*corev1.Pod, string) {
	t.Helper()
	p := d.waitPod(name, 60*time.Second, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	var out string
	_ = waitFor(5*time.Second, func() (bool, error) {
		out = readLog(t, d, p, "main", 0)
		return strings.Contains(out, last), nil
	})
	return p, out
}

// TestRecursiveReadOnlyVolumeMount: a hostPath with a submount (a tmpfs),
// mounted readOnly with recursiveReadOnly IfPossible, is read-only down to
// the submount ("rro": runc lists it in `runc features`, Linux >= 5.12);
// mounted readOnly alone, the submount stays writable, as with the kubelet.
func TestRecursiveReadOnlyVolumeMount(t *testing.T) {
	if out, err := exec.Command("runc", "features").Output(); err != nil || !strings.Contains(string(out), `"rro"`) {
		t.Skipf("runc does not list the rro mount option (runc features: %v)", err)
	}
	hostDir := t.TempDir()
	tmpfsAt(t, filepath.Join(hostDir, "sub")) // before newPodhostd: unmounted after podhost's teardown
	d := newPodhostd(t)
	d.start()
	d.writeManifest("rro.yaml", podManifest("rro", fmt.Sprintf(`  restartPolicy: Never
  volumes:
  - name: data
    hostPath: {path: %s, type: Directory}
  containers:
  - name: main
    image: %s
    command: ["sh", "-c"]
    args:
    - |
      touch /rro/top 2>/dev/null && echo rro-top=writable || echo rro-top=readonly
      touch /rro/sub/f 2>/dev/null && echo rro-sub=writable || echo rro-sub=readonly
      touch /ro/sub/g 2>/dev/null && echo ro-sub=writable || echo ro-sub=readonly
      echo done
    volumeMounts:
    - {name: data, mountPath: /rro, readOnly: true, recursiveReadOnly: IfPossible}
    - {name: data, mountPath: /ro, readOnly: true}
`, hostDir, env.ImageRef)))
	_, out := finishedLog(t, d, "rro", "done")
	for _, want := range []string{"rro-top=readonly", "rro-sub=readonly", "ro-sub=writable"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q (podhost logs \"runtime features\" at start):\n%s", want, out)
		}
	}
}

// tmpfsAt mounts a small tmpfs at dir (created) until the test's cleanup.
func tmpfsAt(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// TestAppArmorAdmission: on a host without AppArmor (as containerd's CRI
// decides it), a pod asking for a profile, here through the deprecated
// annotation, is rejected as by the kubelet's AppArmor admission: Failed,
// reason AppArmor, nothing started. A pod asking for nothing runs.
func TestAppArmorAdmission(t *testing.T) {
	if apparmor.HostSupports() {
		t.Skip("this host has AppArmor")
	}
	d := newPodhostd(t)
	d.start()
	d.writeManifest("aa.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: aa
  annotations:
    container.apparmor.security.beta.kubernetes.io/main: localhost/podhost-test
spec:
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, env.ImageRef))
	p := d.waitPod("aa", 30*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if p.Status.Reason != "AppArmor" || !strings.Contains(p.Status.Message, "AppArmor is not enabled on the host") {
		t.Errorf("status reason %q message %q, want AppArmor / not enabled", p.Status.Reason, p.Status.Message)
	}
	if n, err := countContainers(); err != nil || n != 0 {
		t.Errorf("%d containers (%v), want none", n, err)
	}
}
