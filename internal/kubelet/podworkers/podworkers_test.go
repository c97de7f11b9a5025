package podworkers

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestCreateSyncs(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("a", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	c := e.h.expect(t, "sync", "a")
	if c.t != SyncPodCreate || c.pod != pod {
		t.Fatalf("SyncPod got type %v pod %p", c.t, c.pod)
	}
	if d := e.waitScheduled(t); d < 54*time.Second || d > 66*time.Second {
		t.Fatalf("resync in %v, want 60s±10%%", d)
	}
	if st, ok := e.pw.State("a"); !ok || st.State != SyncPod || !st.HasConfig {
		t.Fatalf("State = %+v %v", st, ok)
	}
	if e.pw.IsPodTerminationRequested("a") || !e.pw.CouldHaveRunningContainers("a") || e.pw.ShouldPodBeFinished("a") {
		t.Fatal("fresh pod reported as terminating/finished")
	}
	if got := e.store.phases("a"); !slices.Equal(got, []string{"syncing/0"}) {
		t.Fatalf("persisted %v", got)
	}
	// Resync fires after the interval, as SyncPodSync.
	e.clock.Step(70 * time.Second)
	if c := e.h.expect(t, "sync", "a"); c.t != SyncPodSync {
		t.Fatalf("resync type %v", c.t)
	}
}

func TestUpdatesMergeLatestWins(t *testing.T) {
	e := newEnv(t, nil)
	release := make(chan struct{})
	e.h.hook("sync", func(c call) (bool, error) {
		if c.t == SyncPodCreate {
			<-release
		}
		return false, nil
	})
	v1 := newPod("a", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: v1})
	e.h.expect(t, "sync", "a")
	var last *corev1.Pod
	for range 5 {
		last = newPod("a", "web", 30)
		e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodUpdate, Pod: last})
	}
	close(release)
	e.waitScheduled(t) // after the first sync
	c := e.h.expect(t, "sync", "a")
	if c.pod != last || c.t != SyncPodUpdate {
		t.Fatalf("second sync saw pod %p type %v, want latest %p update", c.pod, c.t, last)
	}
	e.waitScheduled(t) // idle again
	if n := len(e.h.history()); n != 2 {
		t.Fatalf("%d syncs, want 2: %v", n, e.h.history())
	}
}

func TestPendingCreateStaysCreate(t *testing.T) {
	e := newEnv(t, nil)
	// Hold the name so "b" cannot start while updates pile up.
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("a", "web", 30)})
	e.h.expect(t, "sync", "a")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("b", "web", 30)})
	latest := newPod("b", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodUpdate, Pod: latest})
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: newPod("a", "web", 30)})
	e.h.expect(t, "terminating", "a")
	e.h.expect(t, "terminated", "a")
	c := e.h.expect(t, "sync", "b")
	if c.t != SyncPodCreate || c.pod != latest {
		t.Fatalf("first sync of b: type %v pod %p; want create with latest %p", c.t, c.pod, latest)
	}
}

func TestKillCancelsInFlightSync(t *testing.T) {
	e := newEnv(t, nil)
	e.h.hook("sync", blockUntilCancelled)
	pod := newPod("a", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	sync := e.h.expect(t, "sync", "a")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod})
	if sync.ctx.Err() == nil {
		t.Fatal("kill did not cancel the in-flight SyncPod")
	}
	if !e.pw.IsPodTerminationRequested("a") {
		t.Fatal("termination not requested")
	}
	term := e.h.expect(t, "terminating", "a")
	if term.grace != 30 || term.pod != pod {
		t.Fatalf("SyncTerminatingPod grace %d pod %p", term.grace, term.pod)
	}
	e.h.expect(t, "terminated", "a")
	e.waitDone(t, "a")
	if got := e.h.history(); len(got) != 3 {
		t.Fatalf("calls %v, want sync, terminating, terminated once each", got)
	}
	if !e.pw.IsPodKnownTerminated("a") || !e.pw.ShouldPodBeFinished("a") || e.pw.CouldHaveRunningContainers("a") {
		t.Fatal("finished pod not reported terminated/finished")
	}
	// A finished worker ignores further updates, even kills and syncs.
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodUpdate, Pod: pod})
	if e.pw.Wake("a") {
		t.Fatal("Wake of a finished worker reported true")
	}
	want := []string{"syncing/0", "terminating/30", "terminated/30"}
	if got := e.store.phases("a"); !slices.Equal(got, want) {
		t.Fatalf("persisted %v, want %v", got, want)
	}
	if p := podJSON(t, e.store.puts[1].Pod); p.UID != "a" || p.Name != "web" {
		t.Fatalf("persisted pod %v", p.ObjectMeta)
	}
}

func TestKillIsSticky(t *testing.T) {
	e := newEnv(t, nil)
	release := make(chan struct{})
	e.h.hook("terminating", func(call) (bool, error) { <-release; return false, nil })
	pod := newPod("a", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	e.h.expect(t, "sync", "a")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod})
	e.h.expect(t, "terminating", "a")
	// Later non-kill updates do not bring the pod back.
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodUpdate, Pod: newPod("a", "web", 30)})
	e.pw.Wake("a")
	close(release)
	e.h.expect(t, "terminated", "a")
	e.waitDone(t, "a")
	for _, c := range e.h.history()[1:] {
		if c.kind == "sync" {
			t.Fatalf("SyncPod after kill: %v", e.h.history())
		}
	}
}

func TestGracePeriodOnlyShrinks(t *testing.T) {
	e := newEnv(t, nil)
	e.h.hook("terminating", blockUntilCancelled)
	pod := newPod("a", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	e.h.expect(t, "sync", "a")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod, GracePeriodOverride: ptr[int64](20)})
	first := e.h.expect(t, "terminating", "a")
	if first.grace != 20 {
		t.Fatalf("grace %d, want 20", first.grace)
	}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod, GracePeriodOverride: ptr[int64](25)})
	if first.ctx.Err() != nil {
		t.Fatal("a longer grace period cancelled SyncTerminatingPod")
	}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod, GracePeriodOverride: ptr[int64](5)})
	if first.ctx.Err() == nil {
		t.Fatal("a shorter grace period did not cancel SyncTerminatingPod")
	}
	// The kill with 25 was pending too: the worker retries with 5.
	if c := e.h.expect(t, "terminating", "a"); c.grace != 5 {
		t.Fatalf("retry grace %d, want 5", c.grace)
	}
	e.h.hook("terminating", nil)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod, GracePeriodOverride: ptr[int64](0)})
	if c := e.h.expect(t, "terminating", "a"); c.grace != 1 {
		t.Fatalf("grace after override 0 = %d, want 1", c.grace)
	}
	e.h.expect(t, "terminated", "a")
}

func TestEffectiveGracePeriod(t *testing.T) {
	withDel := newPod("a", "web", 30)
	withDel.DeletionGracePeriodSeconds = ptr[int64](10)
	zeroSpec := newPod("a", "web", 0)
	noSpec := newPod("a", "web", 0)
	noSpec.Spec.TerminationGracePeriodSeconds = nil
	for _, tc := range []struct {
		name      string
		current   int64
		pod       *corev1.Pod
		override  *int64
		want      int64
		shortened bool
	}{
		{"spec default", 0, newPod("a", "web", 30), nil, 30, false},
		{"override lowers", 0, newPod("a", "web", 30), ptr[int64](5), 5, false},
		{"override above spec wins first time", 0, newPod("a", "web", 30), ptr[int64](45), 45, false},
		{"never grows", 5, newPod("a", "web", 30), ptr[int64](20), 5, false},
		{"shrinks", 20, newPod("a", "web", 30), ptr[int64](5), 5, true},
		{"deletion grace", 0, withDel, nil, 10, false},
		{"override 0 is 1", 0, newPod("a", "web", 30), ptr[int64](0), 1, false},
		{"negative override is 1", 30, newPod("a", "web", 30), ptr[int64](-3), 1, true},
		{"spec 0 is 1", 0, zeroSpec, nil, 1, false},
		{"no spec value", 0, noSpec, nil, 30, false},
		{"runtime pod", 0, nil, nil, 30, false},
		{"keeps current", 7, newPod("a", "web", 30), nil, 7, false},
	} {
		got, sh := effectiveGracePeriod(tc.current, tc.pod, tc.override)
		if got != tc.want || sh != tc.shortened {
			t.Errorf("%s: got %d,%v want %d,%v", tc.name, got, sh, tc.want, tc.shortened)
		}
	}
}

func TestTerminalSyncPodTerminates(t *testing.T) {
	e := newEnv(t, nil)
	e.h.hook("sync", func(call) (bool, error) { return true, nil })
	pod := newPod("a", "job", 12)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	e.h.expect(t, "sync", "a")
	if c := e.h.expect(t, "terminating", "a"); c.grace != 12 {
		t.Fatalf("grace %d, want spec 12", c.grace)
	}
	e.h.expect(t, "terminated", "a")
	e.waitDone(t, "a")
	// Still desired: kept as finished, not content-removable (not deleted).
	got := e.pw.SyncKnownPods([]*corev1.Pod{pod})
	if st := got["a"]; st.State != TerminatedPod || !st.Finished || st.Orphan || !st.HasConfig {
		t.Fatalf("SyncKnownPods state %+v", st)
	}
	if e.pw.ShouldPodContentBeRemoved("a") {
		t.Fatal("content of a desired terminal pod marked removable")
	}
	// Gone from the desired set: forgotten and its record deleted.
	if got := e.pw.SyncKnownPods(nil); len(got) != 0 {
		t.Fatalf("SyncKnownPods(nil) = %v", got)
	}
	if !slices.Equal(e.store.deletes, []types.UID{"a"}) {
		t.Fatalf("deleted records %v", e.store.deletes)
	}
	if !e.pw.ShouldPodContentBeRemoved("a") || e.pw.CouldHaveRunningContainers("a") {
		t.Fatal("forgotten pod after sync should be removable and not running")
	}
}

func TestTerminalPhaseOnUpdateTerminates(t *testing.T) {
	e := newEnv(t, nil)
	pod := newPod("a", "web", 30)
	pod.Status.Phase = corev1.PodSucceeded
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	e.h.expect(t, "terminating", "a")
	e.h.expect(t, "terminated", "a")
}

func TestSameFullNameWaitsForOlderUID(t *testing.T) {
	e := newEnv(t, nil)
	a, b := newPod("a", "web", 30), newPod("b", "web", 30)
	other := newPod("x", "db", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: a})
	e.h.expect(t, "sync", "a")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: b})
	e.pw.Wake("b") // no effect: b has not started
	// An unrelated pod is not held up; its sync also proves b's goroutine had time.
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: other})
	e.h.expect(t, "sync", "x")
	release := make(chan struct{})
	e.h.hook("terminating", func(c call) (bool, error) { <-release; return false, nil })
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: a})
	e.h.expect(t, "terminating", "a")
	if e.pw.IsPodTerminationRequested("b") {
		t.Fatal("b should be waiting, not terminating")
	}
	close(release)
	e.h.expect(t, "terminated", "a")
	c := e.h.expect(t, "sync", "b")
	if c.t != SyncPodCreate {
		t.Fatalf("b first sync type %v", c.t)
	}
}

func TestTerminatingUIDGoesBeforeWaitingStart(t *testing.T) {
	e := newEnv(t, nil)
	c, b, a := newPod("c", "web", 30), newPod("b", "web", 30), newPod("a", "web", 30)
	release := make(chan struct{})
	e.h.hook("sync", func(cl call) (bool, error) {
		if cl.uid == "c" {
			<-release
		}
		return false, nil
	})
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: c})
	e.h.expect(t, "sync", "c")
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: b})                                   // new desired pod, waits
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: a, GracePeriodOverride: ptr[int64](7)}) // restored terminating pod
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: c})
	close(release)
	e.h.expect(t, "terminating", "c")
	e.h.expect(t, "terminated", "c")
	if cl := e.h.expect(t, "terminating", "a"); cl.grace != 7 {
		t.Fatalf("restored pod grace %d, want 7", cl.grace)
	}
	e.h.expect(t, "terminated", "a")
	e.h.expect(t, "sync", "b")
	for _, cl := range e.h.history() {
		if cl.kind == "sync" && cl.uid == "a" {
			t.Fatal("kill-seeded pod was synced")
		}
	}
}

func TestErrorsRetryWithBackoff(t *testing.T) {
	e := newEnv(t, nil)
	fails := 3
	e.h.hook("sync", func(call) (bool, error) {
		if fails > 0 {
			fails--
			return false, errors.New("boom")
		}
		return false, nil
	})
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("a", "web", 30)})
	for i, base := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		c := e.h.expect(t, "sync", "a")
		if i > 0 && c.t != SyncPodSync {
			t.Fatalf("retry %d type %v", i, c.t)
		}
		d := e.waitScheduled(t)
		if d < base*3/4 || d > base*5/4 {
			t.Fatalf("retry %d after %v, want %v ±25%%", i+1, d, base)
		}
		e.clock.Step(d)
	}
	e.h.expect(t, "sync", "a")
	if d := e.waitScheduled(t); d < 54*time.Second {
		t.Fatalf("after success next sync in %v, want the resync interval", d)
	}
}

func TestBackoffCapped(t *testing.T) {
	for n := 1; n < 20; n++ {
		d := backoff(time.Second, 30*time.Second, n)
		if d > 30*time.Second*5/4 || d < time.Second*3/4 {
			t.Fatalf("backoff(%d) = %v", n, d)
		}
	}
	if d := backoff(time.Second, 30*time.Second, 10); d < 30*time.Second*3/4 {
		t.Fatalf("backoff(10) = %v, want about 30s", d)
	}
}

func TestTerminatingErrorsRetry(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Clock = nil; o.BackoffBase = time.Millisecond; o.BackoffMax = 4 * time.Millisecond })
	fails := map[string]int{"terminating": 2, "terminated": 2}
	e.h.hook("terminating", func(call) (bool, error) { return false, failN(fails, "terminating") })
	e.h.hook("terminated", func(call) (bool, error) { return false, failN(fails, "terminated") })
	pod := newPod("a", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodKill, Pod: pod})
	for range 3 {
		e.h.expect(t, "terminating", "a")
	}
	for range 3 {
		e.h.expect(t, "terminated", "a")
	}
	e.waitDone(t, "a")
}

// failN fails (under the handler's serial calls per pod) n[kind] times.

func failN(n map[string]int, kind string) error {
	if n[kind] > 0 {
		n[kind]--
		return errors.New("transient")
	}
	return nil
}

func TestWakeTriggersCoalescedSync(t *testing.T) {
	e := newEnv(t, nil)
	release := make(chan struct{})
	e.h.hook("sync", func(c call) (bool, error) {
		if c.t == SyncPodSync {
			<-release
		}
		return false, nil
	})
	if e.pw.Wake("a") {
		t.Fatal("Wake of an unknown pod reported true")
	}
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: newPod("a", "web", 30)})
	e.h.expect(t, "sync", "a")
	e.waitScheduled(t)
	if !e.pw.Wake("a") {
		t.Fatal("Wake reported no worker")
	}
	if c := e.h.expect(t, "sync", "a"); c.t != SyncPodSync {
		t.Fatalf("wake sync type %v", c.t)
	}
	for range 5 { // during the in-flight sync: one more sync after it
		e.pw.Wake("a")
	}
	close(release)
	e.waitScheduled(t)
	e.h.expect(t, "sync", "a")
	e.waitScheduled(t)
	if n := len(e.h.history()); n != 3 {
		t.Fatalf("%d syncs, want 3: %v", n, e.h.history())
	}
}

// A SyncPod that asks for a requeue (a back-off expiring) is synced again
// after that delay, on the worker's own timer and clock.
func TestRequeueAfterArmsTheWorkerTimer(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.ResyncInterval = time.Hour })
	e.h.mu.Lock()
	e.h.requeueAfter = 7 * time.Second
	e.h.mu.Unlock()
	pod := newPod("u1", "web", 30)
	e.pw.UpdatePod(UpdatePodOptions{Type: SyncPodCreate, Pod: pod})
	e.h.expect(t, "sync", "u1")
	if d := e.waitScheduled(t); d != 7*time.Second {
		t.Fatalf("scheduled %v, want 7s", d)
	}
	e.clock.Step(7 * time.Second)
	if c := e.h.expect(t, "sync", "u1"); c.t != SyncPodSync {
		t.Fatalf("requeued sync has type %v", c.t)
	}
}
