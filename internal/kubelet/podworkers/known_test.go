package podworkers

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
)

func TestOrphanRuntimePod(t *testing.T) {
	e := newEnv(t, nil)
	rp := &podstate.Pod{UID: "r", Name: "old", Namespace: "default"}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodSync, RunningPod: rp}) // ignored: only kills
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, RunningPod: rp})
	c := e.h.expect(t, "runtime", "r")
	if c.running != rp {
		t.Fatalf("runtime pod %p, want %p", c.running, rp)
	}
	e.waitDone(t, "r")
	if n := len(e.h.history()); n != 1 {
		t.Fatalf("calls %v", e.h.history())
	}
	st, _ := e.pw.State("r")
	if !st.Finished || st.HasConfig || !e.pw.ShouldPodContentBeRemoved("r") {
		t.Fatalf("state %+v", st)
	}
	// Repeated housekeeping kills are ignored until the worker is forgotten.
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, RunningPod: rp})
	if got := e.pw.SyncKnownPods(nil); len(got) != 0 {
		t.Fatalf("SyncKnownPods = %v", got)
	}
	if len(e.store.puts) != 0 || len(e.store.deletes) != 0 {
		t.Fatalf("runtime-only pods must not be persisted: %v %v", e.store.puts, e.store.deletes)
	}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, RunningPod: rp})
	e.h.expect(t, "runtime", "r")
}

// An orphaned runtime pod sharing its full name with a running desired pod
// (the manifest was edited while podhost was down) is torn down at once: it
// must not wait for the desired pod to finish, which it never does.
func TestOrphanDoesNotWaitForRunningHolder(t *testing.T) {
	e := newEnv(t, nil)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("a", "web", 30)})
	e.h.expect(t, "sync", "a")
	rp := &podstate.Pod{UID: "old", Name: "web", Namespace: "default"}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, RunningPod: rp})
	e.h.expect(t, "runtime", "old")
	e.waitDone(t, "old")
	// a keeps the name: a newer UID still waits for it.
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("b", "web", 30)})
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: newPod("a", "web", 30)})
	e.h.expect(t, "terminating", "a")
	e.h.expect(t, "terminated", "a")
	e.h.expect(t, "sync", "b")
}

func TestRuntimeKillOfKnownPodUsesSpec(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("a", "web", 9)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	e.h.expect(t, "sync", "a")
	rp := &podstate.Pod{UID: "a", Name: "web", Namespace: "default"}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, RunningPod: rp})
	c := e.h.expect(t, "terminating", "a")
	if c.pod != pod || c.grace != 9 || c.running != rp {
		t.Fatalf("terminating pod %p grace %d running %p", c.pod, c.grace, c.running)
	}
	e.h.expect(t, "terminated", "a")
}

func TestSyncKnownPods(t *testing.T) {
	e := newEnv(t, nil)
	keep, gone, done := newPod("k", "keep", 30), newPod("g", "gone", 30), newPod("d", "done", 30)
	for _, p := range []*corev1.Pod{keep, gone, done} {
		e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: p})
		e.h.expect(t, "sync", p.UID)
	}
	if !e.pw.CouldHaveRunningContainers("unknown") || e.pw.ShouldPodBeFinished("unknown") {
		t.Fatal("before the first SyncKnownPods unknown pods may run")
	}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: done})
	e.h.expect(t, "terminating", "d")
	e.h.expect(t, "terminated", "d")
	e.waitDone(t, "d")

	got := e.pw.SyncKnownPods([]*corev1.Pod{keep})
	if _, ok := got["d"]; ok {
		t.Fatal("finished orphan not forgotten")
	}
	if st := got["k"]; st.State != SyncPod || st.Orphan {
		t.Fatalf("keep: %+v", st)
	}
	if st := got["g"]; !st.Orphan || st.State != TerminatingPod {
		t.Fatalf("gone: %+v (an undesired syncing pod must be asked to terminate)", st)
	}
	e.h.expect(t, "terminating", "g")
	e.h.expect(t, "terminated", "g")
	e.waitDone(t, "g")
	if !e.pw.ShouldPodContentBeRemoved("g") {
		t.Fatal("deleted+terminated pod content not removable")
	}
	got = e.pw.SyncKnownPods([]*corev1.Pod{keep})
	if len(got) != 1 {
		t.Fatalf("after second sync %v", got)
	}
	if e.pw.CouldHaveRunningContainers("unknown") || !e.pw.ShouldPodBeFinished("unknown") || !e.pw.ShouldPodRuntimeBeRemoved("unknown") {
		t.Fatal("after SyncKnownPods unknown pods are known not to run")
	}
	if !slices.Equal(e.store.deletes, []types.UID{"d", "g"}) {
		t.Fatalf("deleted records %v", e.store.deletes)
	}
}

func TestRestartRequestedSameUID(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("a", "web", 30)
	release := make(chan struct{})
	e.h.hook("terminating", func(call) (bool, error) { <-release; return false, nil })
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	e.h.expect(t, "sync", "a")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod})
	e.h.expect(t, "terminating", "a")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod}) // re-applied, same UID
	close(release)
	e.h.expect(t, "terminated", "a")
	e.waitDone(t, "a")
	if got := e.pw.SyncKnownPods([]*corev1.Pod{pod}); len(got) != 0 {
		t.Fatalf("restart-requested worker not forgotten: %v", got)
	}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	if c := e.h.expect(t, "sync", "a"); c.t != SyncPodCreate {
		t.Fatalf("type %v", c.t)
	}
}

type fakeCache struct {
	pod *podstate.Pod
	got chan time.Time
}

func (f *fakeCache) GetNewerThan(_ context.Context, _ types.UID, t time.Time) (*podstate.Pod, error) {
	f.got <- t
	return f.pod, nil
}

// deletingCache is a fakeCache that records Delete (as *podcache.Cache has).
type deletingCache struct {
	fakeCache
	deleted chan types.UID
}

func (f *deletingCache) Delete(uid types.UID) { f.deleted <- uid }

// TestForgetDropsCachedState: a finished worker that is forgotten drops its
// pod's cached runtime state, so a later worker of the same UID (a rollback
// to it, a file restored) does not take its last observation as fresh.
func TestForgetDropsCachedState(t *testing.T) {
	fc := &deletingCache{fakeCache: fakeCache{pod: &podstate.Pod{UID: "a"}, got: make(chan time.Time, 10)}, deleted: make(chan types.UID, 1)}
	e := newEnv(t, func(o *Options) { o.Cache = fc })
	pod := newPod("a", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	e.h.expect(t, "sync", "a")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod})
	e.h.expect(t, "terminating", "a")
	e.h.expect(t, "terminated", "a")
	e.waitDone(t, "a")
	select {
	case uid := <-fc.deleted:
		t.Fatalf("cache entry %s dropped while the worker is still known", uid)
	default:
	}
	e.pw.SyncKnownPods(nil)
	select {
	case uid := <-fc.deleted:
		if uid != "a" {
			t.Fatalf("deleted %s, want a", uid)
		}
	default:
		t.Fatal("forgotten worker left its cached runtime state")
	}
}

func TestCacheProvidesRunning(t *testing.T) {
	fc := &fakeCache{pod: &podstate.Pod{UID: "a"}, got: make(chan time.Time, 10)}
	e := newEnv(t, func(o *Options) { o.Cache = fc })
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("a", "web", 30)})
	if c := e.h.expect(t, "sync", "a"); c.running != fc.pod {
		t.Fatalf("running %p, want cache's %p", c.running, fc.pod)
	}
	if first := <-fc.got; !first.IsZero() {
		t.Fatalf("first GetNewerThan(%v), want zero time", first)
	}
	e.waitScheduled(t)
	e.pw.Wake("a")
	e.h.expect(t, "sync", "a")
	if second := <-fc.got; !second.Equal(e.clock.Now()) {
		t.Fatalf("second GetNewerThan(%v), want the last sync time", second)
	}
}

// TestSettledSyncNeedsOnlyItsObservation: after a sync that reports
// Settled, the next one asks the cache for state observed since that sync
// began; otherwise since it ended (the kubelet's rule).
func TestSettledSyncNeedsOnlyItsObservation(t *testing.T) {
	for _, settled := range []bool{false, true} {
		t.Run(fmt.Sprintf("settled=%v", settled), func(t *testing.T) {
			fc := &fakeCache{pod: &podstate.Pod{UID: "a"}, got: make(chan time.Time, 10)}
			e := newEnv(t, func(o *Options) { o.Cache = fc })
			e.h.settled = settled
			began := e.clock.Now()
			e.h.hook("sync", func(call) (bool, error) { e.clock.Step(time.Second); return false, nil })
			e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("a", "web", 30)})
			e.h.expect(t, "sync", "a")
			<-fc.got
			e.waitScheduled(t)
			e.pw.Wake("a")
			e.h.expect(t, "sync", "a")
			want := began.Add(time.Second) // the end of the first sync
			if settled {
				want = began
			}
			if got := <-fc.got; !got.Equal(want) {
				t.Fatalf("second GetNewerThan(%v), want %v", got, want)
			}
		})
	}
}

func TestShutdownCancelsAndStops(t *testing.T) {
	e := newEnv(t, nil)
	e.h.hook("sync", blockUntilCancelled)
	var ctxs []context.Context
	for _, uid := range []string{"a", "b", "c"} {
		e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod(uid, uid, 30)})
	}
	for range 3 {
		ctxs = append(ctxs, e.h.next(t).ctx)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := e.pw.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range ctxs {
		if c.Err() == nil {
			t.Fatal("in-flight sync not cancelled by Shutdown")
		}
	}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("d", "d", 30)})
	if _, ok := e.pw.State("d"); ok {
		t.Fatal("worker created after Shutdown")
	}
	for _, c := range e.h.history() {
		if c.kind != "sync" {
			t.Fatalf("Shutdown must not terminate pods: %v", e.h.history())
		}
	}
}

func TestFinishedWorkersExit(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Clock = nil })
	const n = 20
	for i := range n {
		p := newPod(string(rune('a'+i)), "p"+string(rune('a'+i)), 1)
		e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: p})
		e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: p})
	}
	for i := range n {
		e.waitDone(t, types.UID(string(rune('a'+i))))
	}
	e.pw.SyncKnownPods(nil)
	e.pw.mu.Lock()
	left := len(e.pw.statuses) + len(e.pw.names)
	e.pw.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d statuses/name entries left after all pods finished and were forgotten", left)
	}
}

func TestStoreRecordsWaitForDelete(t *testing.T) {
	// A purge's DeleteWorker must land before a new worker's PutWorker for the same UID.
	st := &orderedStore{release: make(chan struct{}), deleting: make(chan struct{})}
	e := newEnv(t, func(o *Options) { o.Store = st })
	pod := newPod("a", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod})
	e.h.expect(t, "terminating", "a")
	e.h.expect(t, "terminated", "a")
	e.waitDone(t, "a")
	go e.pw.SyncKnownPods(nil) // blocks in DeleteWorker until released
	<-st.deleting
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	close(st.release)
	e.h.expect(t, "sync", "a")
	st.mu.Lock()
	defer st.mu.Unlock()
	want := []string{"put terminating", "put terminated", "delete", "put syncing"}
	if !slices.Equal(st.ops, want) {
		t.Fatalf("store ops %v, want %v", st.ops, want)
	}
}

type orderedStore struct {
	fakeStore
	ops      []string
	release  chan struct{}
	deleting chan struct{}
}

func (s *orderedStore) PutWorker(r records.WorkerRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, "put "+r.Phase)
	return nil
}

func (s *orderedStore) DeleteWorker(types.UID) error {
	close(s.deleting)
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, "delete")
	return nil
}
