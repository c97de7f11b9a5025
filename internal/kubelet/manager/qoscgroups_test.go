package manager

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/status"
)

// cpuPod is a pod of one container with these requests and limits
// ("cpu=250m,memory=64Mi"; "" for none).
func cpuPod(uid, requests, limits string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = uid, "default", types.UID(uid)
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl(requests), Limits: rl(limits)}}}
	return p
}

// rl parses "cpu=250m,memory=64Mi".
func rl(s string) corev1.ResourceList {
	if s == "" {
		return nil
	}
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func TestBurstableCPUShares(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	withInit := func(p *corev1.Pod, sidecar, init string) *corev1.Pod {
		p.Spec.InitContainers = []corev1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl(sidecar)}},
			{Name: "init", Resources: corev1.ResourceRequirements{Requests: rl(init)}},
		}
		return p
	}
	overhead := cpuPod("o", "cpu=100m", "")
	overhead.Spec.Overhead = rl("cpu=50m")
	podLevel := cpuPod("pl", "cpu=100m", "")
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=700m")}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want uint64
	}{
		{"no pods", nil, 2},
		{"guaranteed and besteffort only", []*corev1.Pod{cpuPod("g", "cpu=1,memory=1Gi", "cpu=1,memory=1Gi"), cpuPod("be", "", "")}, 2},
		{"one burstable", []*corev1.Pod{cpuPod("a", "cpu=250m", "")}, 256},
		{"three burstable (250m+512m+300m)", []*corev1.Pod{cpuPod("a", "cpu=250m", ""), cpuPod("b", "cpu=512m", "cpu=1"), cpuPod("c", "cpu=300m,memory=64Mi", "")}, 1087},
		{"others do not count", []*corev1.Pod{cpuPod("a", "cpu=250m", ""), cpuPod("g", "cpu=2,memory=1Gi", "cpu=2,memory=1Gi"), cpuPod("be", "", "")}, 256},
		{"memory request only", []*corev1.Pod{cpuPod("m", "memory=64Mi", "")}, 2},
		{"tiny request", []*corev1.Pod{cpuPod("t", "cpu=1m", "")}, 2},
		{"the request counts, not the limit", []*corev1.Pod{cpuPod("l", "cpu=200m", "cpu=1")}, 204},
		{"init step above the sum: sidecar 200m + init 250m > app 100m + sidecar", []*corev1.Pod{withInit(cpuPod("i", "cpu=100m", ""), "cpu=200m", "cpu=250m")}, 460},
		{"sum above the init step", []*corev1.Pod{withInit(cpuPod("s", "cpu=900m", ""), "cpu=100m", "cpu=250m")}, 1024},
		{"overhead added", []*corev1.Pod{overhead}, 153},
		{"pod-level requests win", []*corev1.Pod{podLevel}, 716},
		{"capped", []*corev1.Pod{cpuPod("big", "cpu=300", "")}, 262144},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := burstableCPUShares(tc.pods); got != tc.want {
				t.Errorf("burstableCPUShares = %d, want %d", got, tc.want)
			}
		})
	}
}

// fakeQOS records the shares set and how many worker updates had been
// sent at each call.
type fakeQOS struct {
	mu      sync.Mutex
	w       *fakeWorkers
	shares  []uint64
	updates []int
	// top: each SetNodeAllocatable (cpu milli, memory bytes) with the
	// worker updates sent before it; topErr fails it.
	top    [][3]int64
	topErr error
}

func (f *fakeQOS) SetNodeAllocatable(_ context.Context, cpuMilli, memoryBytes int64) error {
	f.w.mu.Lock()
	n := len(f.w.updates)
	f.w.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.top = append(f.top, [3]int64{cpuMilli, memoryBytes, int64(n)})
	return f.topErr
}

func (f *fakeQOS) SetBurstableCPUShares(_ context.Context, shares uint64) error {
	f.w.mu.Lock()
	n := len(f.w.updates)
	f.w.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shares = append(f.shares, shares)
	f.updates = append(f.updates, n)
	return nil
}

func (f *fakeQOS) last(t *testing.T) (shares uint64, updatesBefore int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.shares) == 0 {
		t.Fatal("QoS cgroups never updated")
	}
	return f.shares[len(f.shares)-1], f.updates[len(f.updates)-1]
}

func newQOSTestManager() (*Manager, *fakeWorkers, *fakeQOS) {
	return newQOSTestManagerEnforcing(nil)
}

func newQOSTestManagerEnforcing(enforced corev1.ResourceList) (*Manager, *fakeWorkers, *fakeQOS) {
	m, w, st, rt, cl := newStartedTestManager()
	q := &fakeQOS{w: w}
	m = New(Deps{Workers: w, Runtime: rt, Store: st, Statuses: status.NewManager(st, status.ManagerOptions{}), Cleaner: cl, Identities: st, QOSCgroups: q},
		Options{Allocatable: m.allocatable, EnforcedAllocatable: enforced})
	m.started = true
	return m, w, q
}

// Node allocatable is enforced before the first pod's worker starts, and
// asked for again on the next full pass (the cgroups Manager makes that
// cheap when it holds, and tries again when it failed: cgroups
// TestV1NodeAllocatable); without it, never.
func TestEnforceNodeAllocatable(t *testing.T) {
	ctx := context.Background()
	m, w, q := newQOSTestManagerEnforcing(rl("cpu=1500m,memory=3Gi"))
	q.topErr = errors.New("EBUSY")
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: cpuPod("a", "", "")}}, nil)
	if len(q.top) != 1 || q.top[0] != [3]int64{1500, 3 << 30, 0} {
		t.Fatalf("SetNodeAllocatable calls = %v, want one of (1500, 3Gi) before any worker update", q.top)
	}
	w.known["a"] = podworkers.WorkerState{}
	m.housekeeping(ctx) // a full pass: tried again
	if len(q.top) != 2 {
		t.Fatalf("after a failure, a full pass: %d calls, want 2", len(q.top))
	}

	m, _, q = newQOSTestManager()
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: cpuPod("a", "", "")}}, nil)
	if len(q.top) != 0 {
		t.Fatalf("nothing to enforce: SetNodeAllocatable called %v", q.top)
	}
}

// New pods' requests count before their workers start (their cgroups are
// made by their first sync).
func TestQOSCgroupsBeforeWorkersStart(t *testing.T) {
	ctx := context.Background()
	m, w, q := newQOSTestManager()
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: cpuPod("a", "cpu=250m", "")}}, nil)
	if shares, before := q.last(t); shares != 256 || before != 0 {
		t.Fatalf("after a: shares %d set with %d worker updates sent, want 256 before any", shares, before)
	}
	m.handleUpdates(ctx, []podset.Update{
		{Op: podset.ADD, Pod: cpuPod("b", "cpu=512m", "")},
		{Op: podset.ADD, Pod: cpuPod("g", "cpu=1,memory=1Gi", "cpu=1,memory=1Gi")},
	}, nil)
	if shares, before := q.last(t); shares != 780 || before != 1 {
		t.Fatalf("after b: shares %d set with %d worker updates sent, want 780 (250m+512m) before b's", shares, before)
	}
	if len(w.updates) != 3 {
		t.Fatalf("worker updates = %d, want 3", len(w.updates))
	}
}

// Housekeeping's full passes drop pods that went away or finished.
func TestQOSCgroupsHousekeeping(t *testing.T) {
	ctx := context.Background()
	m, w, q := newQOSTestManager()
	a, b := cpuPod("a", "cpu=250m", ""), cpuPod("b", "cpu=512m", "")
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: a}, {Op: podset.ADD, Pod: b}}, nil)
	for _, uid := range []types.UID{"a", "b"} {
		w.known[uid] = podworkers.WorkerState{}
	}
	m.housekeeping(ctx) // the first pass is a full one
	if shares, _ := q.last(t); shares != 780 {
		t.Fatalf("shares = %d, want 780", shares)
	}
	calls := len(q.shares)
	m.housekeeping(ctx) // nothing changed: no full pass, no update
	if len(q.shares) != calls {
		t.Fatalf("an idle pass updated the QoS cgroups")
	}

	w.terminated = map[types.UID]bool{"b": true} // b finished terminating
	w.known["b"] = podworkers.WorkerState{Finished: true}
	m.housekeeping(ctx)
	if shares, _ := q.last(t); shares != 256 {
		t.Fatalf("b terminated: shares = %d, want 256", shares)
	}

	m.handleUpdates(ctx, []podset.Update{{Op: podset.REMOVE, Pod: a}}, nil)
	m.pace.changed(time.Now().Add(time.Millisecond)) // as Run does for a snapshot
	m.housekeeping(ctx)
	if shares, _ := q.last(t); shares != 2 {
		t.Fatalf("a removed: shares = %d, want 2", shares)
	}
}
