package manager

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/status"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
)

type fakeWorkers struct {
	mu      sync.Mutex
	updates []podworkers.UpdatePodOptions
	known   map[types.UID]podworkers.WorkerState
	woken   []types.UID
	// terminated and terminating: IsPodKnownTerminated, IsPodTerminationRequested.
	terminated, terminating map[types.UID]bool
}

func (f *fakeWorkers) UpdatePod(o podworkers.UpdatePodOptions) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, o)
	if o.Type == podworkers.SyncPodKill && o.Pod != nil && f.terminating != nil {
		f.terminating[o.Pod.UID] = true // as the real workers: requested at once
	}
}

func (f *fakeWorkers) SyncKnownPods([]*corev1.Pod) map[types.UID]podworkers.WorkerState {
	return maps.Clone(f.known) // a new map per call, as the pod workers'
}
func (f *fakeWorkers) Wake(uid types.UID) bool { f.woken = append(f.woken, uid); return true }
func (f *fakeWorkers) IsPodTerminationRequested(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.terminating[uid]
}

func (f *fakeWorkers) State(uid types.UID) (podworkers.WorkerState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.known[uid]
	return st, ok
}

func (f *fakeWorkers) IsPodKnownTerminated(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.terminated[uid]
}

type fakeRuntime struct {
	pods    []*podstate.Pod
	lists   int
	listErr error
}

func (f *fakeRuntime) ListPods(context.Context) ([]*podstate.Pod, error) {
	f.lists++
	return f.pods, f.listErr
}
func (f *fakeRuntime) CollectGarbage(context.Context) error { return nil }

type fakeStore struct {
	mu         sync.Mutex
	statuses   map[types.UID]corev1.PodStatus
	allocs     map[types.UID]records.Allocation
	sandboxes  []records.SandboxRecord
	identities map[string]records.IdentityRecord
	purged     []types.UID
}

func newFakeStore() *fakeStore {
	return &fakeStore{statuses: map[types.UID]corev1.PodStatus{}, allocs: map[types.UID]records.Allocation{},
		identities: map[string]records.IdentityRecord{}}
}
func (f *fakeStore) ListIdentities() ([]records.IdentityRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []records.IdentityRecord{}
	for _, r := range f.identities {
		out = append(out, r)
	}
	return out, nil
}
func (f *fakeStore) UpdateIdentities(put []records.IdentityRecord, del []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range del {
		delete(f.identities, n)
	}
	for _, r := range put {
		f.identities[r.FullName] = r
	}
	return nil
}
func (f *fakeStore) PutStatuses(sts map[types.UID]corev1.PodStatus) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for uid, st := range sts {
		f.statuses[uid] = st
	}
	return nil
}
func (f *fakeStore) GetStatus(uid types.UID) (corev1.PodStatus, error) { return f.statuses[uid], nil }
func (f *fakeStore) AddEvent(types.UID, records.Event) error           { return nil }
func (f *fakeStore) AddEvents([]records.PodEvent) error                { return nil }
func (f *fakeStore) Events(types.UID) ([]records.Event, error)         { return nil, nil }
func (f *fakeStore) PutAllocations(as []records.Allocation) error {
	for _, a := range as {
		f.allocs[a.UID] = a
	}
	return nil
}
func (f *fakeStore) ListAllocations() ([]records.Allocation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []records.Allocation
	for _, a := range f.allocs {
		out = append(out, a)
	}
	return out, nil
}
func (f *fakeStore) DeleteAllocation(uid types.UID) error {
	delete(f.allocs, uid)
	return nil
}
func (f *fakeStore) ListSandboxes() ([]records.SandboxRecord, error) { return f.sandboxes, nil }
func (f *fakeStore) PurgePod(uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.statuses, uid)
	delete(f.allocs, uid)
	f.purged = append(f.purged, uid)
	return nil
}
func (f *fakeStore) RecordedPods() (map[types.UID]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[types.UID]bool{}
	for uid := range f.statuses {
		out[uid] = true
	}
	for uid := range f.allocs {
		out[uid] = true
	}
	return out, nil
}

type fakeCleaner struct{ cleaned []string }

func (f *fakeCleaner) CleanupSandboxRecord(_ context.Context, r records.SandboxRecord) error {
	f.cleaned = append(f.cleaned, r.ID)
	return nil
}
func (f *fakeCleaner) CleanupLeaks(context.Context, func(types.UID) bool) error { return nil }

func hostPortPod(name, uid string, port int32) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID(uid)
	p.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: port, Protocol: corev1.ProtocolTCP}}}}
	return p
}

func newTestManager() (*Manager, *fakeWorkers, *fakeStore, *fakeRuntime, *fakeCleaner) {
	w := &fakeWorkers{known: map[types.UID]podworkers.WorkerState{}}
	st, rt, cl := newFakeStore(), &fakeRuntime{}, &fakeCleaner{}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("110")}
	m := New(Deps{Workers: w, Runtime: rt, Store: st, Statuses: status.NewManager(st, status.ManagerOptions{}), Cleaner: cl, Identities: st},
		Options{Allocatable: alloc})
	return m, w, st, rt, cl
}

// newStartedTestManager is newTestManager as after its first snapshot
// (housekeeping waits for it).
func newStartedTestManager() (*Manager, *fakeWorkers, *fakeStore, *fakeRuntime, *fakeCleaner) {
	m, w, st, rt, cl := newTestManager()
	m.started = true
	return m, w, st, rt, cl
}

// A replaced pod (REMOVE old + ADD new with the same host port, in one
// batch) must not be rejected for a host-port conflict with itself.
func TestReplacementFreesHostPortFirst(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	old := hostPortPod("web", "u1", 8080)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: old}}, nil)
	nw := hostPortPod("web", "u2", 8080)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: nw}, {Op: podset.REMOVE, Pod: old}}, nil)
	if !m.IsDesired("u2") || m.IsDesired("u1") {
		t.Fatalf("desired: u1=%v u2=%v", m.IsDesired("u1"), m.IsDesired("u2"))
	}
	var types []podworkers.UpdateType
	for _, u := range w.updates {
		types = append(types, u.Type)
	}
	want := []podworkers.UpdateType{podworkers.SyncPodCreate, podworkers.SyncPodKill, podworkers.SyncPodCreate}
	if len(types) != 3 || types[1] != want[1] || types[2] != want[2] {
		t.Fatalf("updates %v, want %v", types, want)
	}
}

// A pod that finished (Succeeded/Failed, not being stopped) or whose worker
// finished terminating holds neither host ports nor resources: a new pod
// with the same host port is admitted (the kubelet's filterOutInactivePods).
func TestFinishedPodsDoNotCountForAdmission(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	sm := m.statuses.(*status.Manager)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("a", "u1", 8080)}}, nil)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("b", "u2", 8080)}}, nil)
	if m.IsDesired("u2") {
		t.Fatal("a running pod's host port must still conflict")
	}
	sm.SetStatus(hostPortPod("a", "u1", 8080), corev1.PodStatus{Phase: corev1.PodSucceeded})
	w.terminating = map[types.UID]bool{"u1": true}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("c", "u3", 8080)}}, nil)
	if m.IsDesired("u3") {
		t.Fatal("a finished pod whose containers are still being stopped holds its port")
	}
	w.terminating = nil
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("d", "u4", 8080)}}, nil)
	if !m.IsDesired("u4") {
		t.Fatal("a Succeeded pod's host port must be free for admission")
	}
	w.terminated = map[types.UID]bool{"u4": true}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("e", "u5", 8080)}}, nil)
	if !m.IsDesired("u5") {
		t.Fatal("a pod known terminated must not hold its host port")
	}
}

func TestHostPortConflictRejects(t *testing.T) {
	m, w, st, _, _ := newTestManager()
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("a", "u1", 8080)}}, nil)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("b", "u2", 8080)}}, nil)
	if len(w.updates) != 1 {
		t.Fatalf("rejected pod reached the workers: %d updates", len(w.updates))
	}
	m.statuses.(*status.Manager).Flush()
	if got := st.statuses["u2"]; got.Phase != corev1.PodFailed || got.Reason != "NodePorts" {
		t.Fatalf("status %+v", got)
	}
	pods := m.Pods()
	if len(pods) != 2 || pods[1].Pod.UID != "u2" || pods[1].Status != nil {
		t.Fatalf("Pods() = %+v", pods)
	}
	// Previously admitted pods are admitted again after a restart, whatever
	// the order the snapshot lists them in.
	m2, w2, _, _, _ := newTestManager()
	m2.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("b", "u2", 8080)}, {Op: podset.ADD, Pod: hostPortPod("a", "u1", 8080)}},
		map[types.UID]bool{"u1": true})
	if !m2.IsDesired("u1") || m2.IsDesired("u2") || len(w2.updates) != 1 {
		t.Fatalf("previously admitted pod not preferred: u1=%v u2=%v", m2.IsDesired("u1"), m2.IsDesired("u2"))
	}
}

func TestHousekeepingTerminatesOrphansAndLeakedSandboxes(t *testing.T) {
	m, w, st, rt, cl := newStartedTestManager()
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("a", "u1", 0)}}, nil)
	rt.pods = []*podstate.Pod{{UID: "u1"}, {UID: "orphan"}, {UID: "terminating"}}
	w.known["terminating"] = podworkers.WorkerState{State: podworkers.TerminatingPod}
	w.known["u1"] = podworkers.WorkerState{State: podworkers.SyncPod, HasConfig: true}
	now := time.Now()
	st.sandboxes = []records.SandboxRecord{
		{ID: "old-of-u1", PodUID: "u1", CreatedAt: now.Add(-time.Hour)},
		{ID: "cur-of-u1", PodUID: "u1", CreatedAt: now},
		{ID: "leaked", PodUID: "gone", CreatedAt: now},
		{ID: "orphan-sb", PodUID: "orphan", CreatedAt: now},
	}
	w.updates = nil
	m.housekeeping(context.Background())
	if len(w.updates) != 1 || w.updates[0].RunningPod == nil || w.updates[0].RunningPod.UID != "orphan" || w.updates[0].Type != podworkers.SyncPodKill {
		t.Fatalf("orphan updates: %+v", w.updates)
	}
	got := map[string]bool{}
	for _, id := range cl.cleaned {
		got[id] = true
	}
	if len(cl.cleaned) != 2 || !got["old-of-u1"] || !got["leaked"] {
		t.Fatalf("cleaned %v, want old-of-u1 and leaked", cl.cleaned)
	}
}

// A full pass purges the state records of a pod that is gone (no manifest,
// no worker, nothing running, no sandbox record: removed while podhost was
// down with nothing left to terminate), and of no other.
func TestHousekeepingPurgesRecordsOfGonePods(t *testing.T) {
	m, w, st, rt, _ := newStartedTestManager()
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("a", "desired", 8080)}}, nil)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod("b", "rejected", 8080)}}, nil)
	w.known["desired"] = podworkers.WorkerState{State: podworkers.SyncPod, HasConfig: true}
	w.known["terminating"] = podworkers.WorkerState{State: podworkers.TerminatingPod}
	rt.pods = []*podstate.Pod{{UID: "desired"}, {UID: "running"}}
	st.sandboxes = []records.SandboxRecord{{ID: "sb", PodUID: "sandboxed", CreatedAt: time.Now()}}
	m.statuses.(*status.Manager).Flush()
	for _, uid := range []types.UID{"terminating", "running", "sandboxed", "gone"} {
		st.statuses[uid] = corev1.PodStatus{Phase: corev1.PodSucceeded}
	}
	st.allocs["gone-too"] = records.Allocation{UID: "gone-too"}
	m.housekeeping(context.Background())
	slices.Sort(st.purged)
	if !slices.Equal(st.purged, []types.UID{"gone", "gone-too"}) {
		t.Fatalf("purged %v, want the gone pods only", st.purged)
	}
	if _, ok := st.statuses["rejected"]; !ok {
		t.Fatal("the rejected pod's status (its only record) was purged")
	}
}

// Before the first snapshot no pod is desired yet: housekeeping must not
// take the running pods for orphans (a manifest URL slow to answer at start
// delays that snapshot), nor list anything; the kubelet skips it likewise
// until its sources are ready.
func TestHousekeepingWaitsForTheFirstSnapshot(t *testing.T) {
	m, w, st, rt, cl := newTestManager()
	rt.pods = []*podstate.Pod{{UID: "u1", Name: "web", Namespace: "default"}}
	st.sandboxes = []records.SandboxRecord{{ID: "sb-u1", PodUID: "u1", CreatedAt: time.Now()}}
	for i := 0; i < 3; i++ {
		m.housekeeping(context.Background())
	}
	if len(w.updates) != 0 || len(cl.cleaned) != 0 || rt.lists != 0 {
		t.Fatalf("before the first snapshot: updates %+v, cleaned %v, %d runtime lists", w.updates, cl.cleaned, rt.lists)
	}
	m.applySnapshot(context.Background(), source.Snapshot{Pods: []*corev1.Pod{hostPortPod("web", "u1", 0)}}, nil)
	w.known["u1"] = podworkers.WorkerState{State: podworkers.SyncPod, HasConfig: true}
	w.updates = nil
	m.housekeeping(context.Background())
	if len(w.updates) != 0 || len(cl.cleaned) != 0 || rt.lists != 2 {
		t.Fatalf("after the first snapshot: updates %+v, cleaned %v, %d runtime lists (want the snapshot's and one full pass)", w.updates, cl.cleaned, rt.lists)
	}
}

// Runtime pods the first snapshot does not add (their manifest was edited
// or removed while podhost was down) are killed before any pod starts, so
// an old version takes its full name before the new version; later
// snapshots leave orphans to housekeeping.
func TestFirstSnapshotKillsOrphansFirst(t *testing.T) {
	m, w, _, rt, _ := newTestManager()
	rt.pods = []*podstate.Pod{{UID: "old", Name: "web", Namespace: "default"}, {UID: "u2", Name: "web", Namespace: "default"}}
	snap := source.Snapshot{Pods: []*corev1.Pod{hostPortPod("web", "u2", 0)}}
	m.applySnapshot(context.Background(), snap, nil)
	if len(w.updates) != 2 || w.updates[0].RunningPod == nil || w.updates[0].RunningPod.UID != "old" ||
		w.updates[0].Type != podworkers.SyncPodKill || w.updates[1].Pod == nil || w.updates[1].Pod.UID != "u2" {
		t.Fatalf("updates %+v, want kill(old) then create(u2)", w.updates)
	}
	rt.pods = append(rt.pods, &podstate.Pod{UID: "later"})
	w.updates = nil
	m.applySnapshot(context.Background(), snap, nil)
	if len(w.updates) != 0 {
		t.Fatalf("second snapshot: updates %+v", w.updates)
	}
}

// The first snapshot names the pods the daemon's readiness waits for.
func TestReadyAfterFirstSyncOfEveryPod(t *testing.T) {
	m, _, _, _, _ := newTestManager()
	a, b := hostPortPod("a", "u1", 0), hostPortPod("b", "u2", 0)
	m.applySnapshot(context.Background(), source.Snapshot{Pods: []*corev1.Pod{a, b}}, nil)
	sm := m.statuses.(*status.Manager)
	sm.SetStatus(m.desired["u1"], corev1.PodStatus{Phase: corev1.PodRunning})
	select {
	case <-sm.Ready():
		t.Fatal("ready before every pod synced")
	default:
	}
	sm.SetStatus(m.desired["u2"], corev1.PodStatus{Phase: corev1.PodRunning})
	select {
	case <-sm.Ready():
	default:
		t.Fatal("not ready after every pod synced")
	}
}

// The preference for pods admitted before a restart holds for the first
// snapshot only: a pod removed and added again later is admitted anew (a
// host port taken meanwhile rejects it).
func TestPrevAdmittedOnlyForTheFirstSnapshot(t *testing.T) {
	m, _, _, _, _ := newTestManager()
	a, b := hostPortPod("a", "u1", 8080), hostPortPod("b", "u2", 8080)
	prev := map[types.UID]bool{"u1": true}
	m.applySnapshot(context.Background(), source.Snapshot{Pods: []*corev1.Pod{a}}, prev)
	m.applySnapshot(context.Background(), source.Snapshot{}, prev)
	m.applySnapshot(context.Background(), source.Snapshot{Pods: []*corev1.Pod{b}}, prev)
	m.applySnapshot(context.Background(), source.Snapshot{Pods: []*corev1.Pod{b, a}}, prev)
	if !m.IsDesired("u2") || m.IsDesired("u1") {
		t.Fatalf("desired: u1=%v u2=%v, want u2 kept and u1 rejected for the port", m.IsDesired("u1"), m.IsDesired("u2"))
	}
}

// A pod deleted and applied again with the same UID while its old worker
// terminates keeps its allocation checkpoint and status: housekeeping, the
// only purge, runs on the loop goroutine and sees it listed. Once deleted
// for good and its worker gone, the next full pass purges it.
func TestHousekeepingKeepsTheRecordsOfAReappliedPod(t *testing.T) {
	m, w, st, _, _ := newStartedTestManager()
	pod := hostPortPod("web", "u1", 8080)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: pod}}, nil)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.REMOVE, Pod: pod}}, nil)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: pod}}, nil)
	st.statuses["u1"] = corev1.PodStatus{Phase: corev1.PodRunning}
	delete(w.known, "u1") // the old worker finished
	m.pace.lastFull = time.Time{}
	m.housekeeping(context.Background())
	if slices.Contains(st.purged, "u1") || st.allocs["u1"].UID != "u1" {
		t.Fatalf("re-applied pod purged %v, allocation %+v", st.purged, st.allocs["u1"])
	}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.REMOVE, Pod: pod}}, nil)
	m.pace.lastFull = time.Time{}
	m.housekeeping(context.Background())
	if !slices.Contains(st.purged, "u1") {
		t.Fatalf("purged %v, want the deleted pod's records", st.purged)
	}
}

// A pod applied again with the UID of a deleted run whose records were not
// purged yet starts afresh (its phase, start time and events its own); one
// whose worker has not finished (terminating, or running under a deferred
// kill), or admitted before a restart, keeps them.
func TestReappliedPodStartsWithoutTheOldRunsRecords(t *testing.T) {
	for _, tc := range []struct {
		name       string
		worker     *podworkers.WorkerState // nil: none known
		prev       bool
		wantPurged bool
	}{
		{name: "old run gone", wantPurged: true},
		{name: "old worker finished", worker: &podworkers.WorkerState{Finished: true}, wantPurged: true},
		{name: "old worker not finished", worker: &podworkers.WorkerState{}},
		{name: "admitted before a restart", prev: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, w, st, _, _ := newStartedTestManager()
			w.known = map[types.UID]podworkers.WorkerState{}
			if tc.worker != nil {
				w.known["u1"] = *tc.worker
			}
			pod := hostPortPod("web", "u1", 8080)
			started := metav1.NewTime(time.Now().Add(-time.Hour))
			st.statuses["u1"] = corev1.PodStatus{Phase: corev1.PodSucceeded, StartTime: &started} // the old run's
			m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: pod}}, map[types.UID]bool{"u1": tc.prev})
			if got := slices.Contains(st.purged, "u1"); got != tc.wantPurged {
				t.Fatalf("purged %v, want %v", got, tc.wantPurged)
			}
			stat, ok := m.statuses.Status("u1")
			if carried := ok && stat.Phase == corev1.PodSucceeded; carried == tc.wantPurged {
				t.Fatalf("status %+v (tracked %v): the old run's carried over %v, want %v", stat, ok, carried, !tc.wantPurged)
			}
			if !m.IsDesired("u1") {
				t.Fatal("pod not admitted")
			}
		})
	}
}
