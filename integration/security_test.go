//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	p := d.waitPod("locked", 60*time.Second, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	var out string
	_ = waitFor(5*time.Second, func() (bool, error) {
		out = readLog(t, d, p, "main", 0)
		return strings.Contains(out, "NoNewPrivs"), nil
	})
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
