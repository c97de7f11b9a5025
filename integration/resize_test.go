//go:build integration

package integration

// In-place resize (issue 12): a same-UID edit (metadata.uid set) that
// changes only containers' resources is applied to the running containers
// and pod cgroup — checked in the host's cgroup files (v1 here, cgroupfs),
// the containerd task PID and the API status.

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/host/state"
)

// resizePod is pod "rs" (uid fixed) with containers main (cpu/mem, requests
// = limits: Guaranteed) and side (100m/32Mi); mainExtra is appended to main.
func resizePod(uid, cpu, mem, mainExtra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: rs
  uid: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    resources:
      limits: {cpu: %s, memory: %s}
%s  - name: side
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]
    resources:
      limits: {cpu: 100m, memory: 32Mi}
`, uid, env.ImageRef, cpu, mem, mainExtra, env.ImageRef)
}

func containerStatusOf(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// actuatedMemory: main's status shows memory limit mem actuated, allocated
// requests equal to it, and no resize in progress.
func actuatedMemory(mem string) func(*corev1.Pod) bool {
	want := resource.MustParse(mem)
	return func(p *corev1.Pod) bool {
		cs := containerStatusOf(p, "main")
		return allRunning(p) && cs != nil && cs.Resources != nil && cs.Resources.Limits.Memory().Cmp(want) == 0 &&
			cs.AllocatedResources.Memory().Cmp(want) == 0 && podCondition(p, corev1.PodResizeInProgress) == nil
	}
}

// cgroupLimits reads a container's memory limit and CFS quota, and its pod
// cgroup's (the parent dir), from the v1 hierarchies.
func cgroupLimits(t *testing.T, p *corev1.Pod, container string) (mem, quota, podMem, podQuota int64) {
	t.Helper()
	pid := containerPID(t, p, container)
	memCg, cpuCg := cgroupOf(t, pid, "memory"), cgroupOf(t, pid, "cpu")
	return readInt(t, filepath.Join("/sys/fs/cgroup/memory", memCg, "memory.limit_in_bytes")),
		readInt(t, filepath.Join("/sys/fs/cgroup/cpu", cpuCg, "cpu.cfs_quota_us")),
		readInt(t, filepath.Join("/sys/fs/cgroup/memory", filepath.Dir(memCg), "memory.limit_in_bytes")),
		readInt(t, filepath.Join("/sys/fs/cgroup/cpu", filepath.Dir(cpuCg), "cpu.cfs_quota_us"))
}

func checkLimits(t *testing.T, p *corev1.Pod, wantMem, wantQuota, wantPodMem, wantPodQuota int64) {
	t.Helper()
	mem, quota, podMem, podQuota := cgroupLimits(t, p, "main")
	if mem != wantMem || quota != wantQuota || podMem != wantPodMem || podQuota != wantPodQuota {
		t.Fatalf("cgroups: main memory %d quota %d, pod memory %d quota %d; want %d %d %d %d",
			mem, quota, podMem, podQuota, wantMem, wantQuota, wantPodMem, wantPodQuota)
	}
}

// TestResizeInPlace: 64Mi→128Mi and 200m→500m on the running pod: same
// container and PID, no restart, new limits in the container and pod
// cgroups, status allocated = actuated; then a resize beyond allocatable is
// Infeasible and changes nothing.
func TestResizeInPlace(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	const uid = "7e3c5a10-0000-4000-8000-000000000012"
	d.writeManifest("rs.yaml", resizePod(uid, "200m", "64Mi", ""))
	before := d.waitPod("rs", 60*time.Second, "running at 64Mi", actuatedMemory("64Mi"))
	checkLimits(t, before, 64<<20, 20000, 96<<20, 30000)
	id, pid := containerStatusOf(before, "main").ContainerID, containerPID(t, before, "main")
	sideID := containerStatusOf(before, "side").ContainerID

	d.writeManifest("rs.yaml", resizePod(uid, "500m", "128Mi", ""))
	after := d.waitPod("rs", 30*time.Second, "resized to 128Mi", actuatedMemory("128Mi"))
	cs := containerStatusOf(after, "main")
	if cs.ContainerID != id || containerPID(t, after, "main") != pid || cs.RestartCount != 0 || containerStatusOf(after, "side").ContainerID != sideID {
		t.Fatalf("main %s pid %d restarts %d (was %s pid %d), side %s (was %s): want the same containers, not restarted",
			cs.ContainerID, containerPID(t, after, "main"), cs.RestartCount, id, pid, containerStatusOf(after, "side").ContainerID, sideID)
	}
	if got := cs.AllocatedResources.Cpu(); got.Cmp(resource.MustParse("500m")) != 0 {
		t.Fatalf("allocated cpu %s, want 500m", got)
	}
	checkLimits(t, after, 128<<20, 50000, 160<<20, 60000)

	d.writeManifest("rs.yaml", resizePod(uid, "500m", "100Ti", ""))
	pending := d.waitPod("rs", 30*time.Second, "resize Infeasible", func(p *corev1.Pod) bool {
		c := podCondition(p, corev1.PodResizePending)
		return c != nil && c.Reason == corev1.PodReasonInfeasible
	})
	if pending.Status.Resize != corev1.PodResizeStatusInfeasible {
		t.Fatalf("status.resize %q, want Infeasible", pending.Status.Resize)
	}
	if cs := containerStatusOf(pending, "main"); cs.ContainerID != id || cs.AllocatedResources.Memory().Cmp(resource.MustParse("128Mi")) != 0 {
		t.Fatalf("after an Infeasible resize: main %s allocated %v, want %s at 128Mi", cs.ContainerID, cs.AllocatedResources, id)
	}
	checkLimits(t, pending, 128<<20, 50000, 160<<20, 60000)
}

// TestResizeRestartPolicy: resizePolicy RestartContainer for memory
// restarts exactly that container, which comes back with the new limit.
func TestResizeRestartPolicy(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	const uid = "7e3c5a10-0000-4000-8000-000000000013"
	policy := "    resizePolicy: [{resourceName: memory, restartPolicy: RestartContainer}]\n"
	d.writeManifest("rs.yaml", resizePod(uid, "200m", "64Mi", policy))
	before := d.waitPod("rs", 60*time.Second, "running at 64Mi", actuatedMemory("64Mi"))
	id, sideID := containerStatusOf(before, "main").ContainerID, containerStatusOf(before, "side").ContainerID

	d.writeManifest("rs.yaml", resizePod(uid, "200m", "128Mi", policy))
	after := d.waitPod("rs", 30*time.Second, "main restarted at 128Mi", actuatedMemory("128Mi"))
	cs := containerStatusOf(after, "main")
	if cs.ContainerID == id || cs.RestartCount != 1 {
		t.Fatalf("main %s restarts %d (was %s): want a new container, restart count 1", cs.ContainerID, cs.RestartCount, id)
	}
	if side := containerStatusOf(after, "side"); side.ContainerID != sideID || side.RestartCount != 0 {
		t.Fatalf("side %s restarts %d (was %s): want untouched", side.ContainerID, side.RestartCount, sideID)
	}
	checkLimits(t, after, 128<<20, 20000, 160<<20, 30000)
}

// TestResizeAfterKillBetweenCheckpointAndCgroups: podhost is SIGKILLed
// after the allocation checkpoint was written (the manifest and checkpoint
// say 128Mi) but before any cgroup changed (the container runs at 64Mi):
// after the restart the cgroups match the checkpoint, same container.
func TestResizeAfterKillBetweenCheckpointAndCgroups(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	const uid = "7e3c5a10-0000-4000-8000-000000000014"
	d.writeManifest("rs.yaml", resizePod(uid, "200m", "64Mi", ""))
	before := d.waitPod("rs", 60*time.Second, "running at 64Mi", actuatedMemory("64Mi"))
	id, pid := containerStatusOf(before, "main").ContainerID, containerPID(t, before, "main")

	d.kill(syscall.SIGKILL)
	d.writeManifest("rs.yaml", resizePod(uid, "500m", "128Mi", ""))
	db, err := state.Open(filepath.Join(d.stateDir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	allocs, err := db.ListAllocations()
	if err != nil || len(allocs) != 1 || allocs[0].Containers["main"].Limits == nil {
		db.Close()
		t.Fatalf("checkpoints %+v, %v", allocs, err)
	}
	a := allocs[0]
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	a.Containers["main"] = corev1.ResourceRequirements{Requests: l.DeepCopy(), Limits: l}
	err = db.PutAllocation(a)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkLimits(t, before, 64<<20, 20000, 96<<20, 30000)

	d.start()
	after := d.waitPod("rs", 30*time.Second, "reconciled to 128Mi", actuatedMemory("128Mi"))
	if cs := containerStatusOf(after, "main"); cs.ContainerID != id || containerPID(t, after, "main") != pid || cs.RestartCount != 0 {
		t.Fatalf("main %s restarts %d (was %s pid %d): want the same container", cs.ContainerID, cs.RestartCount, id, pid)
	}
	checkLimits(t, after, 128<<20, 50000, 160<<20, 60000)
}

// TestResizeMemoryBelowUsageIsNotApplied: a memory limit decrease below
// what the container uses is never written (it would OOM-kill): the
// container keeps running at its old limit, the status says the resize is
// in progress with an error, nothing is restarted.
func TestResizeMemoryBelowUsageIsNotApplied(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	const uid = "7e3c5a10-0000-4000-8000-000000000015"
	hog := func(mem string) string {
		// main holds ~70 MB in a shell variable (filling it takes about
		// twice that for a moment: the first limit leaves room).
		return strings.Replace(resizePod(uid, "200m", mem, ""),
			`command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]`,
			`command: ["sh", "-c", "x=$(head -c 70000000 /dev/zero | tr '\\0' a); touch /tmp/full; trap 'exit 0' TERM; while true; do sleep 0.1; done"]`, 1)
	}
	d.writeManifest("rs.yaml", hog("192Mi"))
	before := d.waitPod("rs", 60*time.Second, "running at 192Mi", actuatedMemory("192Mi"))
	if err := waitFor(30*time.Second, func() (bool, error) {
		_, _, code := d.execCLI("", "rs", "-c", "main", "--", "test", "-e", "/tmp/full")
		return code == 0, nil
	}); err != nil {
		t.Fatal("main never filled its memory")
	}
	id := containerStatusOf(before, "main").ContainerID

	d.writeManifest("rs.yaml", hog("32Mi"))
	after := d.waitPod("rs", 30*time.Second, "resize in progress with an error", func(p *corev1.Pod) bool {
		c := podCondition(p, corev1.PodResizeInProgress)
		return c != nil && c.Reason == corev1.PodReasonError && strings.Contains(c.Message, "less than current memory usage")
	})
	cs := containerStatusOf(after, "main")
	if cs.ContainerID != id || cs.RestartCount != 0 || cs.State.Running == nil {
		t.Fatalf("main %s restarts %d state %s (was %s): want still running, not restarted", cs.ContainerID, cs.RestartCount, stateString(cs.State), id)
	}
	if cs.AllocatedResources.Memory().Cmp(resource.MustParse("32Mi")) != 0 || cs.Resources.Limits.Memory().Cmp(resource.MustParse("192Mi")) != 0 {
		t.Fatalf("allocated %v actuated %v: want 32Mi allocated, 192Mi actuated", cs.AllocatedResources, cs.Resources.Limits)
	}
	mem, _, podMem, _ := cgroupLimits(t, after, "main")
	if mem != 192<<20 || podMem != 224<<20 {
		t.Fatalf("cgroups: main memory %d, pod %d; want 192Mi and 224Mi kept", mem, podMem)
	}
}

// TestResizeQOSChangeRefused: an edit of a pod's resources that would turn
// it from Guaranteed into Burstable keeps the pod (its UID derives from the
// identity, which leaves resources out) and its containers, and the resize
// is refused as Kubernetes refuses it: Infeasible, naming the QoS class.
func TestResizeQOSChangeRefused(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("rs.yaml", resizePod("", "200m", "64Mi", ""))
	before := d.waitPod("rs", 60*time.Second, "running at 64Mi", actuatedMemory("64Mi"))
	id := containerStatusOf(before, "main").ContainerID

	d.writeManifest("rs.yaml", resizePod("", "200m", "64Mi", "      requests: {cpu: 100m, memory: 32Mi}\n"))
	pending := d.waitPod("rs", 30*time.Second, "resize Infeasible", func(p *corev1.Pod) bool {
		c := podCondition(p, corev1.PodResizePending)
		return c != nil && c.Reason == corev1.PodReasonInfeasible
	})
	if c := podCondition(pending, corev1.PodResizePending); !strings.Contains(c.Message, "QOS") {
		t.Fatalf("resize pending: %q, want the QoS class named", c.Message)
	}
	if pending.UID != before.UID || containerStatusOf(pending, "main").ContainerID != id || pending.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Fatalf("pod %s main %s qos %s, was %s %s Guaranteed: want the same pod, untouched",
			pending.UID, containerStatusOf(pending, "main").ContainerID, pending.Status.QOSClass, before.UID, id)
	}
	checkLimits(t, pending, 64<<20, 20000, 96<<20, 30000)
}
