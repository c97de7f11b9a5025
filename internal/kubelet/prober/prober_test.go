package prober

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podhost/podhost/internal/model/podstate"
)

const waitLimit = 5 * time.Second

// call is one probe run waiting for the test's verdict.
type call struct {
	req   request
	at    time.Time
	reply chan verdict
}

type verdict struct {
	out    outcome
	output string
	err    error
}

// fakeRunner hands every probe run to the test.
type fakeRunner struct {
	clock *clocktesting.FakeClock
	calls chan call
}

func (f *fakeRunner) run(ctx context.Context, req request) (outcome, string, error) {
	c := call{req: req, at: f.clock.Now(), reply: make(chan verdict, 1)}
	select {
	case f.calls <- c:
	case <-ctx.Done():
		return outcomeUnknown, "", ctx.Err()
	}
	select {
	case v := <-c.reply:
		return v.out, v.output, v.err
	case <-ctx.Done():
		return outcomeUnknown, "", ctx.Err()
	}
}

type unhealthy struct{ uid, id, name, reason string }

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Event(_ types.UID, typ, reason, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, typ+" "+reason+" "+msg)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

type fixture struct {
	t         *testing.T
	m         *Manager
	clock     *clocktesting.FakeClock
	runner    *fakeRunner
	changes   chan types.UID
	unhealthy chan unhealthy
	rec       *recorder
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := &fixture{
		t: t, clock: fc, runner: &fakeRunner{clock: fc, calls: make(chan call)},
		changes: make(chan types.UID, 100), unhealthy: make(chan unhealthy, 10), rec: &recorder{},
	}
	f.m = New(Options{Clock: fc, Recorder: f.rec})
	f.m.runner = f.runner
	done := make(chan struct{})
	go func() { // the sync loop's part: read Updates, look at Results
		defer close(done)
		for uid := range f.m.updatesUntilClosed() {
			for name, u := range f.m.Results(uid).Unhealthy {
				f.unhealthy <- unhealthy{string(uid), u.ContainerID, name, u.Reason}
			}
			f.changes <- uid
		}
	}()
	t.Cleanup(func() { f.m.Close(); <-done })
	return f
}

// updatesUntilClosed forwards Updates until the manager is closed.
func (m *Manager) updatesUntilClosed() <-chan types.UID {
	out := make(chan types.UID)
	go func() {
		defer close(out)
		for {
			select {
			case uid := <-m.Updates():
				out <- uid
			case <-m.ctx.Done():
				return
			}
		}
	}()
	return out
}

// next waits for the next probe run.
func (f *fixture) next() call {
	f.t.Helper()
	select {
	case c := <-f.runner.calls:
		return c
	case <-time.After(waitLimit):
		f.t.Fatal("no probe ran")
	}
	return call{}
}

// answer waits for the next probe run of type t (by its spec) and answers it.
func (f *fixture) answer(want *corev1.Probe, v verdict) call {
	f.t.Helper()
	c := f.next()
	if c.req.probe != want {
		f.t.Fatalf("probe run for %+v, want %+v", c.req.probe, want)
	}
	c.reply <- v
	return c
}

func (f *fixture) waitChange() {
	f.t.Helper()
	select {
	case <-f.changes:
	case <-time.After(waitLimit):
		f.t.Fatal("no result change")
	}
}

func (f *fixture) waitUnhealthy() unhealthy {
	f.t.Helper()
	select {
	case u := <-f.unhealthy:
		return u
	case <-time.After(waitLimit):
		f.t.Fatal("no container reported unhealthy")
	}
	return unhealthy{}
}

func probeSpec(period, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		PeriodSeconds: period, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: failure,
	}
}

func testPod(c corev1.Container) *corev1.Pod {
	c.Name = "app"
	return &corev1.Pod{
		ObjectMeta: metaUID("pod-1"),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c, {Name: "plain"}}},
	}
}

func metaUID(uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid)}
}

func runningPod(pod *corev1.Pod, id string, startedAt time.Time) *podstate.Pod {
	return &podstate.Pod{UID: pod.UID, Containers: []*podstate.Container{
		{ID: id, Name: "app", State: podstate.StateRunning, StartedAt: startedAt},
		{ID: "plain-1", Name: "plain", State: podstate.StateRunning, StartedAt: startedAt},
	}}
}

var (
	ok   = verdict{out: outcomeSuccess}
	fail = verdict{out: outcomeFailure, output: "boom\n"}
)

func TestReadinessUnreadyUntilSuccessThenFailureThreshold(t *testing.T) {
	f := newFixture(t)
	rp := probeSpec(10, 3)
	pod := testPod(corev1.Container{ReadinessProbe: rp})
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "10.0.0.5")
	if f.m.Ready(pod.UID, "app") {
		t.Fatal("ready before the first probe")
	}
	if !f.m.Ready(pod.UID, "plain") {
		t.Fatal("container without probes must be ready")
	}
	c := f.answer(rp, ok)
	if c.req.podIP != "10.0.0.5" || c.req.containerID != "c1" {
		t.Fatalf("request %+v", c.req)
	}
	f.waitChange()
	if !f.m.Ready(pod.UID, "app") {
		t.Fatal("not ready after a success")
	}
	for i := range 3 {
		f.clock.Step(10 * time.Second)
		f.answer(rp, fail)
		if i < 2 && !f.m.Ready(pod.UID, "app") {
			// Below the threshold nothing changes (the run is recorded
			// before the next one starts, checked on the next answer).
			t.Fatalf("unready after %d failures", i+1)
		}
	}
	f.waitChange()
	if f.m.Ready(pod.UID, "app") {
		t.Fatal("still ready after 3 failures")
	}
	ev := f.rec.list()
	if len(ev) != 3 || ev[0] != "Warning Unhealthy Readiness probe failed: boom" {
		t.Fatalf("events %q", ev)
	}
}

func TestLivenessFailureReportsUnhealthyAndHolds(t *testing.T) {
	f := newFixture(t)
	lp := probeSpec(1, 2)
	pod := testPod(corev1.Container{LivenessProbe: lp})
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "10.0.0.5")
	f.answer(lp, fail)
	f.clock.Step(time.Second)
	f.answer(lp, fail)
	u := f.waitUnhealthy()
	if u != (unhealthy{"pod-1", "c1", "app", ReasonLiveness}) {
		t.Fatalf("OnUnhealthy(%+v)", u)
	}
	// On hold: further ticks do not probe the old container; the restarted
	// one gets a fresh worker.
	f.clock.Step(time.Second)
	f.m.Sync(pod, runningPod(pod, "c2", f.clock.Now()), "10.0.0.5")
	if c := f.answer(lp, ok); c.req.containerID != "c2" {
		t.Fatalf("probed %s after the hold, want the new container c2", c.req.containerID)
	}
	// A liveness probe alone leaves readiness to the running state.
	if !f.m.Ready(pod.UID, "app") || !f.m.Started(pod.UID, "app") {
		t.Fatal("liveness-only container must be ready and started")
	}
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	f := newFixture(t)
	sp, lp, rp := probeSpec(1, 3), probeSpec(5, 3), probeSpec(5, 3)
	pod := testPod(corev1.Container{StartupProbe: sp, LivenessProbe: lp, ReadinessProbe: rp})
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "10.0.0.5")
	// Only the startup probe runs (the others skip their first round).
	f.answer(sp, fail)
	r := f.m.Results(pod.UID)
	ready, started := r.Ready, r.Started
	if ready["app"] || started["app"] {
		t.Fatalf("ready=%v started=%v before startup succeeded", ready, started)
	}
	f.clock.Step(time.Second)
	f.answer(sp, ok)
	f.waitChange()
	if !f.m.Started(pod.UID, "app") || f.m.Ready(pod.UID, "app") {
		t.Fatal("want started and not yet ready")
	}
	// Liveness and readiness run at their next tick; startup no more.
	f.clock.Step(5 * time.Second)
	// Either may run more than once (a readiness probe that is not yet
	// ready is also run on demand); both must run.
	seen := map[*corev1.Probe]bool{}
	for i := 0; i < 6 && (!seen[lp] || !seen[rp]); i++ {
		c := f.next()
		seen[c.req.probe] = true
		c.reply <- ok
	}
	if !seen[lp] || !seen[rp] {
		t.Fatalf("probes run after startup: %v", seen)
	}
	f.waitChange()
	if !f.m.Ready(pod.UID, "app") {
		t.Fatal("not ready after the readiness success")
	}
}

func TestStartupFailureReportsUnhealthy(t *testing.T) {
	f := newFixture(t)
	sp := probeSpec(1, 2)
	pod := testPod(corev1.Container{StartupProbe: sp, LivenessProbe: probeSpec(1, 1)})
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "")
	f.answer(sp, fail)
	f.clock.Step(time.Second)
	f.answer(sp, fail)
	if u := f.waitUnhealthy(); u.reason != ReasonStartup || u.id != "c1" {
		t.Fatalf("OnUnhealthy(%+v)", u)
	}
	if f.m.Started(pod.UID, "app") {
		t.Fatal("started after the startup probe failed")
	}
}

func TestInitialDelay(t *testing.T) {
	f := newFixture(t)
	rp := probeSpec(1, 3)
	rp.InitialDelaySeconds = 5
	pod := testPod(corev1.Container{ReadinessProbe: rp})
	start := f.clock.Now()
	f.m.Sync(pod, runningPod(pod, "c1", start), "10.0.0.5")
	for range 5 {
		f.clock.Step(time.Second)
	}
	c := f.answer(rp, ok)
	if d := c.at.Sub(start); d < 5*time.Second {
		t.Fatalf("probed %v after start, before the initial delay", d)
	}
}

func TestErroredProbeIsRetriedThenDiscarded(t *testing.T) {
	f := newFixture(t)
	lp := probeSpec(1, 1)
	pod := testPod(corev1.Container{LivenessProbe: lp})
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "10.0.0.5")
	for range maxProbeRetries {
		f.answer(lp, verdict{out: outcomeUnknown, err: errors.New("no such process")})
	}
	// Thrown away: the next failure (threshold 1) is the one that kills.
	f.clock.Step(time.Second)
	f.answer(lp, fail)
	f.waitUnhealthy()
	ev := f.rec.list()
	if len(ev) != 2 || !strings.Contains(ev[0], "Liveness probe errored and resulted in unknown state: no such process") ||
		ev[1] != "Warning Unhealthy Liveness probe failed: boom" {
		t.Fatalf("events %q", ev)
	}
}

func TestSyncStopsWorkersOfStoppedContainersAndForget(t *testing.T) {
	f := newFixture(t)
	rp := probeSpec(1, 1)
	pod := testPod(corev1.Container{ReadinessProbe: rp})
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "10.0.0.5")
	f.answer(rp, ok)
	f.waitChange()
	exited := runningPod(pod, "c1", f.clock.Now())
	exited.Containers[0].State = podstate.StateExited
	f.m.Sync(pod, exited, "10.0.0.5")
	if ready := f.m.Results(pod.UID).Ready; len(ready) != 0 {
		t.Fatalf("results for a stopped container: %v", ready)
	}
	f.m.Sync(pod, runningPod(pod, "c2", f.clock.Now()), "10.0.0.5")
	if f.m.Ready(pod.UID, "app") {
		t.Fatal("a new container starts unready")
	}
	f.answer(rp, ok)
	f.waitChange()
	f.m.Forget(pod.UID)
	if r := f.m.Results(pod.UID); len(r.Ready)+len(r.Started) != 0 {
		t.Fatal("results survive Forget")
	}
}

func TestStopLivenessAndStartupKeepsReadiness(t *testing.T) {
	f := newFixture(t)
	lp, rp := probeSpec(1, 1), probeSpec(1, 1)
	pod := testPod(corev1.Container{LivenessProbe: lp, ReadinessProbe: rp})
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "10.0.0.5")
	// Either may run more than once (a readiness probe that is not yet
	// ready is also run on demand); both must run.
	seen := map[*corev1.Probe]bool{}
	for i := 0; i < 6 && (!seen[lp] || !seen[rp]); i++ {
		c := f.next()
		seen[c.req.probe] = true
		c.reply <- ok
	}
	f.waitChange()
	f.m.StopLivenessAndStartup(pod.UID)
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "10.0.0.5") // no liveness worker again
	f.clock.Step(time.Second)
	f.answer(rp, ok) // never the liveness probe
	f.clock.Step(time.Second)
	f.answer(rp, ok)
	f.m.Forget(pod.UID)
	f.m.Sync(pod, runningPod(pod, "c2", f.clock.Now()), "10.0.0.5")
	seen = map[*corev1.Probe]bool{}
	for range 2 {
		c := f.next()
		seen[c.req.probe] = true
		c.reply <- ok
	}
	if !seen[lp] {
		t.Fatal("liveness not probed after Forget")
	}
}

func TestPodWithoutProbesIsNotTracked(t *testing.T) {
	f := newFixture(t)
	pod := testPod(corev1.Container{})
	f.m.Sync(pod, runningPod(pod, "c1", f.clock.Now()), "10.0.0.5")
	f.m.mu.Lock()
	n := len(f.m.pods)
	f.m.mu.Unlock()
	if n != 0 || !f.m.Ready(pod.UID, "app") {
		t.Fatalf("tracked %d pods", n)
	}
}
