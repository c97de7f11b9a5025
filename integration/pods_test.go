//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/testenv"
)

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// String is what was written so far.
func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// countContainers counts containers in the suite's namespace, straight from
// containerd.
func countContainers() (int, error) {
	cs, err := env.Client().Containers(env.Context(context.Background()))
	return len(cs), err
}

// podContainers returns the containerd containers of a pod uid by label.
func podContainers(t *testing.T, uid string) map[string]string {
	t.Helper()
	ctx := env.Context(context.Background())
	cs, err := env.Client().Containers(ctx, fmt.Sprintf("labels.%q==%s", wellknown.LabelPodUID, uid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cs {
		labels, err := c.Labels(ctx)
		if errdefs.IsNotFound(err) {
			continue // removed between the list and this read (podhost is deleting it)
		}
		if err != nil {
			t.Fatal(err)
		}
		out[c.ID()] = labels[wellknown.LabelContainerName]
	}
	return out
}

func podManifest(name, body string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n%s", name, body)
}

// TestTwoContainerPodSharesNetwork: one container serves HTTP with busybox
// httpd, the other reaches it on localhost; the pod IP answers from the
// host; a hostPort answers from the host; limits land in cgroup files.
func TestTwoContainerPodSharesNetwork(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	hostPort := testenv.FreePort(t)
	d.writeManifest("web.yaml", podManifest("web", fmt.Sprintf(`  terminationGracePeriodSeconds: 2
  containers:
  - name: server
    image: %[1]s
    command: ["sh", "-c", "mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports:
    - containerPort: 8080
      hostPort: %[2]d
    resources:
      limits: {memory: 64Mi, cpu: 250m}
  - name: client
    image: %[1]s
    command: ["sh", "-c", "until wget -qO /tmp/got http://localhost:8080/; do sleep 0.2; done; cat /tmp/got; exec sleep 3600"]
    resources:
      limits: {memory: 32Mi, cpu: 100m}
`, env.ImageRef, hostPort)))
	p := d.waitRunning("web")
	if p.Status.PodIP == "" {
		t.Fatalf("no pod IP: %s", statusSummary(p))
	}
	if err := waitFor(10*time.Second, func() (bool, error) {
		body, err := httpGet("http://" + p.Status.PodIP + ":8080/")
		return strings.Contains(body, "hello-from-web"), err
	}); err != nil {
		t.Fatalf("pod IP %s does not answer: %v", p.Status.PodIP, err)
	}
	if err := waitFor(10*time.Second, func() (bool, error) {
		body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/", hostPort))
		return strings.Contains(body, "hello-from-web"), err
	}); err != nil {
		t.Fatalf("hostPort %d does not answer: %v", hostPort, err)
	}
	// The client container reached the server over the shared localhost.
	logPath := filepath.Join(d.logDir, fmt.Sprintf("default_web_%s", p.UID), "client", "0.log")
	if err := waitFor(10*time.Second, func() (bool, error) {
		b, err := os.ReadFile(logPath)
		return bytes.Contains(b, []byte("hello-from-web")), err
	}); err != nil {
		t.Fatalf("client log %s: %v", logPath, err)
	}
	checkMemoryLimit(t, p, "server", 64<<20)
	checkPodCgroup(t, d, p)
}

// TestHostNetworkPod runs httpd in the host's network namespace.
func TestHostNetworkPod(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	port := testenv.FreePort(t)
	d.writeManifest("hostnet.yaml", podManifest("hostnet", fmt.Sprintf(`  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    image: %s
    command: ["sh", "-c", "mkdir -p /www && echo host-net > /www/index.html && exec httpd -f -p 127.0.0.1:%d -h /www"]
`, env.ImageRef, port)))
	d.waitRunning("hostnet")
	if err := waitFor(10*time.Second, func() (bool, error) {
		body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/", port))
		return strings.Contains(body, "host-net"), err
	}); err != nil {
		t.Fatalf("hostNetwork pod does not answer on the host's loopback: %v", err)
	}
}

// containerPID returns the PID of a running container of the pod.
func containerPID(t testing.TB, p *corev1.Pod, name string) int {
	t.Helper()
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != name {
			continue
		}
		id := strings.TrimPrefix(cs.ContainerID, "containerd://")
		ctx := env.Context(context.Background())
		c, err := env.Client().LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		task, err := c.Task(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return int(task.Pid())
	}
	t.Fatalf("container %s not in status", name)
	return 0
}

// cgroupOf returns the cgroup path of pid in the v1 hierarchy with controller.
func cgroupOf(t *testing.T, pid int, controller string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[1] == controller || strings.Contains(","+parts[1]+",", ","+controller+",")) {
			return parts[2]
		}
	}
	t.Fatalf("pid %d has no %s cgroup:\n%s", pid, controller, b)
	return ""
}

func readInt(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func checkMemoryLimit(t *testing.T, p *corev1.Pod, container string, want int64) {
	t.Helper()
	cg := cgroupOf(t, containerPID(t, p, container), "memory")
	if got := readInt(t, filepath.Join("/sys/fs/cgroup/memory", cg, "memory.limit_in_bytes")); got != want {
		t.Fatalf("container %s memory limit %d, want %d (cgroup %s)", container, got, want, cg)
	}
	// No swap (the kubelet's NoSwap) where the memory controller accounts it.
	if memsw := filepath.Join("/sys/fs/cgroup/memory", cg, "memory.memsw.limit_in_bytes"); fileExists(memsw) {
		if got := readInt(t, memsw); got != want {
			t.Fatalf("container %s memory+swap limit %d, want %d: no swap (cgroup %s)", container, got, want, cg)
		}
	}
	quota := readInt(t, filepath.Join("/sys/fs/cgroup/cpu", cgroupOf(t, containerPID(t, p, container), "cpu"), "cpu.cfs_quota_us"))
	if quota <= 0 {
		t.Fatalf("container %s has no CPU quota", container)
	}
}

// checkPodCgroup: the pod's cgroup (parent of the containers') carries the
// pod-level limits: the sum of the containers' limits.
func checkPodCgroup(t *testing.T, d *podhostd, p *corev1.Pod) {
	t.Helper()
	cg := cgroupOf(t, containerPID(t, p, "server"), "memory")
	podCg := filepath.Dir(cg)
	if !strings.Contains(podCg, "pod"+string(p.UID)) && !strings.Contains(podCg, strings.ReplaceAll(string(p.UID), "-", "_")) {
		t.Fatalf("container cgroup %s is not under a pod cgroup", cg)
	}
	if !strings.HasPrefix(podCg, "/"+d.cgroupRoot) {
		t.Fatalf("pod cgroup %s not under %s", podCg, d.cgroupRoot)
	}
	if got := readInt(t, filepath.Join("/sys/fs/cgroup/memory", podCg, "memory.limit_in_bytes")); got != 96<<20 {
		t.Fatalf("pod memory limit %d, want %d", got, 96<<20)
	}
	if got := readInt(t, filepath.Join("/sys/fs/cgroup/cpu", podCg, "cpu.cfs_quota_us")); got != 35000 {
		t.Fatalf("pod cpu quota %d, want 35000", got)
	}
}

// snapshotCount counts snapshots in the suite's namespace.
func snapshotCount(t *testing.T) int {
	t.Helper()
	ctx := env.Context(context.Background())
	n := 0
	err := env.Client().SnapshotService(env.Snapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
