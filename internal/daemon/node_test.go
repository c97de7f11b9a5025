package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/kubelet/eviction"
	"github.com/podhost/podhost/internal/ops/rthealth"
	"github.com/podhost/podhost/internal/version"
)

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseBootTime(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{in: "cpu  1 2 3\nintr 5\nbtime 1767225600\nprocesses 9\n"},
		{in: "cpu  1 2 3\n", err: "boot time: stat: no btime line"},
		{in: "btime soon\n", err: `boot time: stat: btime "soon": strconv.ParseInt`},
	} {
		got, err := parseBootTime(strings.NewReader(tc.in), "stat")
		switch {
		case tc.err == "" && (err != nil || !got.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))):
			t.Errorf("%q: %v, %v", tc.in, got, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q…", tc.in, err, tc.err)
		}
	}
	if _, err := bootTime(filepath.Join(t.TempDir(), "none")); err == nil || !strings.HasPrefix(err.Error(), "boot time: open ") {
		t.Errorf("missing /proc/stat: %v", err)
	}
}

// osImage is cadvisor's: PRETTY_NAME of the first os-release file there is.
func TestOSImage(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct{ content, want string }{
		{"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nID=debian\n", "Debian GNU/Linux 13 (trixie)"},
		{"PRETTY_NAME=Alpine\n", "Alpine"},
		{"PRETTY_NAME='Single quoted'\n", "Single quoted"},
		{"ID=custom\n", "Linux"},
	} {
		p := writeFile(t, filepath.Join(dir, "os-release"), tc.content)
		if got := osImage(missing, p); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.content, got, tc.want)
		}
	}
	if got := osImage(missing); got != "" {
		t.Errorf("no os-release: %q", got)
	}
}

// testNodeFiles are a machine's files in dir; product_uuid is unreadable.
func testNodeFiles(t *testing.T) nodeFiles {
	dir := t.TempDir()
	return nodeFiles{
		procStat:    writeFile(t, filepath.Join(dir, "stat"), "cpu  1 2\nbtime 1767225600\n"),
		machineID:   writeFile(t, filepath.Join(dir, "machine-id"), "0123abcd\n"),
		productUUID: filepath.Join(dir, "product_uuid"),
		bootID:      writeFile(t, filepath.Join(dir, "boot_id"), " 5e1f-boot \n"),
		osRelease:   []string{writeFile(t, filepath.Join(dir, "os-release"), "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n")},
	}
}

func TestNodeSource(t *testing.T) {
	started := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	now := started.Add(time.Hour)
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	s := newNodeSource(nodeSpec{name: "host1", labels: map[string]string{"kubernetes.io/hostname": "host1"},
		capacity: capacity, allocatable: allocatable, hostIP: "10.0.0.5", hostname: "Host1"}, testNodeFiles(t), started)
	s.now = func() time.Time { return now }
	health := rthealth.Status{Address: "/run/c.sock", Healthy: true}
	s.health = func() rthealth.Status { return health }
	asked := 0
	s.runtimeVersion = func(ctx context.Context) (string, error) {
		asked++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("containerd's version asked without a timeout")
		}
		return "v2.1.4", nil
	}
	n := s.node(context.Background())
	if n.APIVersion != "v1" || n.Kind != "Node" || n.Name != "host1" || n.Labels["kubernetes.io/hostname"] != "host1" ||
		!n.CreationTimestamp.Time.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("metadata: %+v %+v", n.TypeMeta, n.ObjectMeta)
	}
	if !equalLists(n.Status.Capacity, capacity) || !equalLists(n.Status.Allocatable, allocatable) {
		t.Errorf("capacity %v, allocatable %v", n.Status.Capacity, n.Status.Allocatable)
	}
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "Host1"}}
	if len(n.Status.Addresses) != 2 || n.Status.Addresses[0] != want[0] || n.Status.Addresses[1] != want[1] {
		t.Errorf("addresses %v", n.Status.Addresses)
	}
	wantInfo := corev1.NodeSystemInfo{MachineID: "0123abcd", BootID: "5e1f-boot", KernelVersion: kernelRelease(),
		OSImage: "Debian GNU/Linux 13 (trixie)", ContainerRuntimeVersion: "containerd://v2.1.4", KubeletVersion: version.Version,
		OperatingSystem: "linux", Architecture: goruntime.GOARCH}
	if n.Status.NodeInfo != wantInfo || wantInfo.KernelVersion == "" {
		t.Errorf("node info\n%+v, want\n%+v", n.Status.NodeInfo, wantInfo)
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "podhost is posting ready status"}
	checkReady(t, "healthy", n, ready, now, started)

	// While containerd is unreachable: NotReady since the outage began, and
	// containerd is not asked for its version.
	since := now.Add(-5 * time.Minute)
	health = rthealth.Status{Address: "/run/c.sock", Since: since, Changed: since, Err: "connection refused"}
	n = s.node(context.Background())
	checkReady(t, "outage", n, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "containerd at /run/c.sock is unreachable since " + since.Format(time.RFC3339) + ": connection refused"}, now, since)
	if asked != 1 || n.Status.NodeInfo.ContainerRuntimeVersion != "" {
		t.Errorf("outage: version asked %d times, %q", asked, n.Status.NodeInfo.ContainerRuntimeVersion)
	}
	// Back: Ready since it came back; a failed version call leaves it empty.
	health = rthealth.Status{Address: "/run/c.sock", Healthy: true, Changed: now.Add(-time.Minute)}
	s.runtimeVersion = func(context.Context) (string, error) { return "", errors.New("unavailable") }
	n = s.node(context.Background())
	checkReady(t, "recovered", n, ready, now, now.Add(-time.Minute))
	if n.Status.NodeInfo.ContainerRuntimeVersion != "" {
		t.Errorf("failed version call: %q", n.Status.NodeInfo.ContainerRuntimeVersion)
	}
	// Each Node is a copy.
	n.Labels["x"], n.Status.Capacity[corev1.ResourceCPU] = "y", resource.MustParse("1")
	if n2 := s.node(context.Background()); n2.Labels["x"] != "" || n2.Status.Capacity.Cpu().Value() != 4 {
		t.Errorf("the node source changed with a Node it returned: %v %v", n2.Labels, n2.Status.Capacity)
	}
}

func checkReady(t *testing.T, name string, n *corev1.Node, want corev1.NodeCondition, heartbeat, transition time.Time) {
	t.Helper()
	if len(n.Status.Conditions) != 1 {
		t.Fatalf("%s: conditions %v", name, n.Status.Conditions)
	}
	c := n.Status.Conditions[0]
	if c.Type != want.Type || c.Status != want.Status || c.Reason != want.Reason || c.Message != want.Message ||
		!c.LastHeartbeatTime.Time.Equal(heartbeat) || !c.LastTransitionTime.Time.Equal(transition) {
		t.Errorf("%s: %+v, want %+v, heartbeat %v, transition %v", name, c, want, heartbeat, transition)
	}
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if r, ok := b[k]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

// The node's capacity is what allocatable is computed from: every resource
// of it, none below allocatable.
func TestNodeAllocatableCapacity(t *testing.T) {
	res, err := nodeAllocatable(&config.Config{StateDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The configured hard thresholds are kept out of allocatable memory.
	ts, err := eviction.Parse(map[string]string{"memory.available": "1Gi"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	more, err := nodeAllocatable(&config.Config{StateDir: t.TempDir()}, ts)
	if err != nil {
		t.Fatal(err)
	}
	if m1, m2 := res.Allocatable[corev1.ResourceMemory], more.Allocatable[corev1.ResourceMemory]; m1.Value()-m2.Value() != 1<<30 {
		t.Errorf("allocatable memory with memory.available<1Gi: %s, without thresholds %s", m2.String(), m1.String())
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		c, a := res.Capacity[name], res.Allocatable[name]
		if c.IsZero() || c.Cmp(a) < 0 {
			t.Errorf("%s: capacity %s, allocatable %s", name, c.String(), a.String())
		}
	}
	if len(res.Enforced) == 0 {
		t.Errorf("enforced: %v", res.Enforced)
	}
}
