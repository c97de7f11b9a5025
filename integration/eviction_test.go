//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// evictionDeadline bounds each eviction wait: a period of 1 s, the kill
// and a loaded machine.
const evictionDeadline = 90 * time.Second

func evicted(msg string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" && p.Status.Message == msg
	}
}

// waitProcessGone waits until the host has no process pid any more.
func waitProcessGone(t *testing.T, pid int, what string) {
	t.Helper()
	if err := waitFor(evictionDeadline, func() (bool, error) { return !running(pid), nil }); err != nil {
		t.Fatalf("%s: process %d still runs on the host", what, pid)
	}
}

// TestEvictionLocalStorage: a container writing past its ephemeral-storage
// limit, and a pod writing past its emptyDir's sizeLimit, are evicted as
// the kubelet evicts them (phase Failed, reason Evicted, its message, a
// Warning event), their processes gone from the host and their containers
// from containerd; a pod without limits writing as much runs on.
func TestEvictionLocalStorage(t *testing.T) {
	d := newPodhostd(t)
	// No node pressure thresholds: the shared machine's disks and memory
	// must not evict anything here.
	setEvictionHard(t, d, "{}")
	appendConfig(t, d, "evictionMonitoringPeriod: 1s\n")
	d.start()
	write := func(path string) string {
		return fmt.Sprintf(`["sh", "-c", "trap 'exit 0' TERM; dd if=/dev/zero of=%s bs=1M count=8 && while true; do sleep 1; done"]`, path)
	}
	d.writeManifest("layer.yaml", podManifest("layer", `  terminationGracePeriodSeconds: 30
  containers:
  - name: writer
    image: `+env.ImageRef+`
    command: `+write("/big")+`
    resources:
      limits: {ephemeral-storage: 4Mi}
  - name: idle
    image: `+env.ImageRef+`
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    resources:
      limits: {ephemeral-storage: 100Mi}
`))
	d.writeManifest("scratch.yaml", podManifest("scratch", `  terminationGracePeriodSeconds: 30
  containers:
  - name: writer
    image: `+env.ImageRef+`
    command: `+write("/scratch/big")+`
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: scratch
    emptyDir: {sizeLimit: 2Mi}
`))
	d.writeManifest("free.yaml", podManifest("free", `  terminationGracePeriodSeconds: 1
  containers:
  - name: writer
    image: `+env.ImageRef+`
    command: `+write("/big")+`
`))
	// Evicted within the period of the write; wait for Running first only
	// to learn the processes (a pod may be evicted before we look).
	pids := map[string]int{}
	for _, name := range []string{"layer", "scratch", "free"} {
		p := d.waitPod(name, evictionDeadline, "running or evicted", func(p *corev1.Pod) bool {
			return allRunning(p) || p.Status.Phase == corev1.PodFailed
		})
		if allRunning(p) {
			pids[name] = containerPID(t, p, "writer")
		}
	}
	layerMsg := `Container writer exceeded its local ephemeral storage limit "4Mi". `
	scratchMsg := `Usage of EmptyDir volume "scratch" exceeds the limit "2Mi". `
	layer := d.waitPod("layer", evictionDeadline, "evicted", evicted(layerMsg))
	scratch := d.waitPod("scratch", evictionDeadline, "evicted", evicted(scratchMsg))
	d.waitEvent("layer", "Evicted", layerMsg, evictionDeadline)
	d.waitEvent("scratch", "Evicted", scratchMsg, evictionDeadline)
	for name, pid := range pids {
		if name != "free" {
			waitProcessGone(t, pid, name)
		}
	}
	for _, p := range []*corev1.Pod{layer, scratch} {
		if err := waitFor(evictionDeadline, func() (bool, error) { return len(podContainers(t, string(p.UID))) == 0, nil }); err != nil {
			t.Errorf("%s: containers left in containerd after the eviction: %v", p.Name, podContainers(t, string(p.UID)))
		}
	}
	// The pod without limits wrote as much and runs on; the evicted ones
	// are not restarted (restartPolicy Always).
	free := d.waitRunning("free")
	if pid := containerPID(t, free, "writer"); pids["free"] != 0 && pid != pids["free"] {
		t.Errorf("free: writer restarted (pid %d, was %d)", pid, pids["free"])
	}
	for _, name := range []string{"layer", "scratch"} {
		if p := d.pod(name); p == nil || p.Status.Phase != corev1.PodFailed {
			t.Errorf("%s: %s after the eviction, want Failed", name, statusSummary(p))
		}
	}
}

// TestEvictionMemoryPressure: allocatableMemory.available (the limit on
// cgroupParent less the pods' working set) under its threshold, driven by
// a pod of this test filling tmpfs emptyDirs (the shared machine's free
// memory is never touched: the threshold is on the cgroup the test owns).
// The lowest priority pod is evicted first, then the hog; the critical
// static pod is left alone; describe node shows MemoryPressure, and a new
// BestEffort pod is refused while it lasts.
func TestEvictionMemoryPressure(t *testing.T) {
	d := newPodhostd(t)
	hugetlb := meminfoBytes(t, "Hugetlb")
	if hugetlb == 0 {
		hugetlb = meminfoBytes(t, "HugePages_Total") / 1024 * meminfoBytes(t, "Hugepagesize")
	}
	// The pods' cgroup gets 700Mi; pressure once the pods use 200Mi, which
	// is also allocatable (700Mi less the threshold), the most one memory
	// emptyDir may hold: the hog fills two, 150Mi each.
	reserved := meminfoBytes(t, "MemTotal") - hugetlb - 700<<20
	setEvictionHard(t, d, "{memory.available: 500Mi}")
	appendConfig(t, d, fmt.Sprintf("systemReserved: {memory: %q}\nevictionMonitoringPeriod: 1s\nevictionPressureTransitionPeriod: 1h\n", fmt.Sprint(reserved)))
	d.start()
	idle := `["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]`
	d.writeManifest("critical.yaml", podManifest("critical", `  priorityClassName: system-node-critical
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: `+idle+`
`))
	d.writeManifest("low.yaml", podManifest("low", `  priority: 1
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: `+idle+`
`))
	crit, low := d.waitRunning("critical"), d.waitRunning("low")
	critPID, lowPID := containerPID(t, crit, "main"), containerPID(t, low, "main")
	if c := nodeCondition(t, d, corev1.NodeMemoryPressure); c.Status != corev1.ConditionFalse || c.Reason != "KubeletHasSufficientMemory" {
		t.Fatalf("MemoryPressure before the hog: %+v", c)
	}
	d.writeManifest("hog.yaml", podManifest("hog", `  priority: 1000
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sh", "-c", "trap 'exit 0' TERM; for d in a b; do dd if=/dev/zero of=/$d/fill bs=1M count=150; done; while true; do sleep 1; done"]
    volumeMounts: [{name: a, mountPath: /a}, {name: b, mountPath: /b}]
  volumes:
  - name: a
    emptyDir: {medium: Memory}
  - name: b
    emptyDir: {medium: Memory}
`))
	lowMsg := "The node was low on resource: memory. Threshold quantity: 500Mi, available: "
	low = d.waitPod("low", evictionDeadline, "evicted for memory", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" && strings.HasPrefix(p.Status.Message, lowMsg)
	})
	d.waitEvent("low", "Evicted", lowMsg, evictionDeadline)
	waitProcessGone(t, lowPID, "low")
	hog := d.waitPod("hog", evictionDeadline, "evicted for memory", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" &&
			strings.HasPrefix(p.Status.Message, lowMsg) && strings.Contains(p.Status.Message, "Container main was using ")
	})
	t.Logf("low: %s\nhog: %s", low.Status.Message, hog.Status.Message)
	if c := nodeCondition(t, d, corev1.NodeMemoryPressure); c.Status != corev1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" {
		t.Errorf("MemoryPressure after the evictions: %+v", c)
	}
	out := d.mustCLI("describe", "node")
	if !strings.Contains(out, "MemoryPressure") || !strings.Contains(out, "KubeletHasInsufficientMemory") {
		t.Errorf("describe node shows no memory pressure:\n%s", out)
	}
	// Under MemoryPressure a new BestEffort pod is refused, as the
	// kubelet's eviction admit handler refuses it.
	d.writeManifest("late.yaml", podManifest("late", `  containers:
  - name: main
    image: `+env.ImageRef+`
    command: `+idle+`
`))
	d.waitPod("late", evictionDeadline, "refused under memory pressure", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" &&
			p.Status.Message == "Pod was rejected: The node had condition: [MemoryPressure]. "
	})
	// The critical pod is left alone, on the host too.
	if p := d.pod("critical"); p == nil || !allRunning(p) || containerPID(t, p, "main") != critPID || !running(critPID) {
		t.Errorf("critical pod: %s, want its process %d running", statusSummary(p), critPID)
	}
}

// nodeCondition is the condition of GET /v1/node (describe node's, the
// kube API's Node).
func nodeCondition(t *testing.T, d *podhostd, typ corev1.NodeConditionType) corev1.NodeCondition {
	t.Helper()
	n, err := d.client.Node(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("node has no %s condition: %+v", typ, n.Status.Conditions)
	return corev1.NodeCondition{}
}

// setEvictionHard replaces the harness's evictionHard line of the config.
func setEvictionHard(t *testing.T, d *podhostd, value string) {
	t.Helper()
	b, err := os.ReadFile(d.configPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), harnessEvictionHard) {
		t.Fatalf("%s has no line %q", d.configPath, harnessEvictionHard)
	}
	cfg := strings.Replace(string(b), harnessEvictionHard, "evictionHard: "+value+"\n", 1)
	if err := os.WriteFile(d.configPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}
