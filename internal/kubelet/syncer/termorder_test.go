package syncer

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// armClock is the world's fake clock telling armed of every timer armed
// (after arming it), so a test steps time only once the syncer waits.
type armClock struct {
	*clocktesting.FakeClock
	armed chan time.Duration
}

func (c armClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.armed <- d
	return ch
}

// hookedSidecarPod: the app container a and the sidecar s, which has a preStop
// hook when hook is set (the syncer runs it from the container's label).
func hookedSidecarPod(hook bool) *corev1.Pod {
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	always := corev1.ContainerRestartPolicyAlways
	s := corev1.Container{Name: "s", Image: "busybox:1", Command: []string{"sleep", "1000"},
		ImagePullPolicy: corev1.PullIfNotPresent, RestartPolicy: &always}
	if hook {
		s.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"prestop"}}}}
	}
	pod.Spec.InitContainers = []corev1.Container{s}
	return pod
}

// terminationWorld runs pod's a and s, then starts its termination with
// grace seconds while a ignores its stop signal until the returned release
// is closed (and hooks run until hookBlock is closed, if set). It returns
// once a's stop has begun.
func terminationWorld(t *testing.T, pod *corev1.Pod, grace int64, hookBlock chan struct{}) (w *world, b *beganLog, clk armClock, release chan struct{}, done chan error) {
	t.Helper()
	w = newWorld()
	for i := 0; i < 3; i++ {
		if _, err := syncOnce(t, w, pod); err != nil {
			t.Fatal(err)
		}
	}
	if w.idOf(pod.UID, "a") == "" || w.idOf(pod.UID, "s") == "" {
		t.Fatal("a and s do not run")
	}
	clk = armClock{FakeClock: w.clk, armed: make(chan time.Duration, 8)}
	w.s.clock = clk
	w.hooks.started, w.hooks.block = make(chan string, 4), hookBlock
	release = make(chan struct{})
	g := &gatedStops{fakeRuntime: w.rt, gate: map[string]chan struct{}{w.idOf(pod.UID, "a"): release}, began: make(chan string, 4)}
	w.s.rt = g
	done = make(chan error, 1)
	go func() { done <- w.s.SyncTerminatingPod(context.Background(), pod, nil, grace) }()
	b = &beganLog{ch: g.began, seen: map[string]bool{}}
	b.wait(t, w.idOf(pod.UID, "a"))
	return w, b, clk, release, done
}

// beganLog keeps the stops begun that gatedStops reported.
type beganLog struct {
	ch   chan string
	seen map[string]bool
}

// wait waits until the stop of id has begun.
func (b *beganLog) wait(t *testing.T, id string) {
	t.Helper()
	for !b.seen[id] {
		select {
		case got := <-b.ch:
			b.seen[got] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("the stop of %s did not begin", id)
		}
	}
}

// begun reports whether the stop of id has begun by now.
func (b *beganLog) begun(id string) bool {
	for {
		select {
		case got := <-b.ch:
			b.seen[got] = true
		default:
			return b.seen[id]
		}
	}
}

// armedTimer waits for the syncer to arm a timer and returns its duration.
func armedTimer(t *testing.T, clk armClock) time.Duration {
	t.Helper()
	select {
	case d := <-clk.armed:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("no timer armed")
		return 0
	}
}

func waitForValue[T comparable](t *testing.T, ch <-chan T, want T) {
	t.Helper()
	for {
		select {
		case got := <-ch:
			if got == want {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %v", want)
		}
	}
}

// A sidecar's preStop hook starts at t=0, while the app container is still
// stopping; its stop signal waits for the app container (the kubelet's
// killContainersWithSyncResult: killContainer runs the hook, then
// terminationOrdering.waitForTurn).
func TestSidecarPreStopRunsAtOnce(t *testing.T) {
	pod := hookedSidecarPod(true)
	w, b, clk, release, done := terminationWorld(t, pod, 10, nil)
	waitForValue(t, w.hooks.started, "prestop s stops=0")
	if d := armedTimer(t, clk); d != 10*time.Second {
		t.Fatalf("preStop timer %v, want 10s", d)
	}
	if d := armedTimer(t, clk); d != 10*time.Second {
		t.Fatalf("turn timer %v, want 10s", d)
	}
	if b.begun(w.idOf(pod.UID, "s")) {
		t.Fatal("s got its stop signal before the app container stopped")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := w.rt.stopOrder; len(got) != 2 || got[0] != "a" || got[1] != "s" {
		t.Fatalf("stop order %q, want a, s", got)
	}
}

// The sidecar's stop signal gets the grace period less its preStop hook's
// time and its wait for the app container, at least 2 s; a wait beyond
// the grace period ends with it; with no grace left it does not wait.
func TestSidecarGraceAccounting(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hook  bool
		grace int64
		hookT time.Duration // fake time the hook takes
		appT  time.Duration // fake time the app container takes to stop; 0: beyond the grace period
		want  time.Duration
	}{
		{name: "app stops in 3s of 10s", grace: 10, appT: 3 * time.Second, want: 7 * time.Second},
		{name: "hook 1s, app 3s of 10s", hook: true, grace: 10, hookT: time.Second, appT: 3 * time.Second, want: 6 * time.Second},
		{name: "app stops in 9s of 10s: 2s minimum", grace: 10, appT: 9 * time.Second, want: 2 * time.Second},
		{name: "app outlives the grace period", grace: 10, want: 2 * time.Second},
		{name: "grace 0: no wait", grace: 0, want: 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := hookedSidecarPod(tc.hook)
			var block chan struct{}
			if tc.hook {
				block = make(chan struct{})
			}
			w, b, clk, release, done := terminationWorld(t, pod, tc.grace, block)
			s := w.idOf(pod.UID, "s")
			if tc.hook {
				armedTimer(t, clk)
				clk.Step(tc.hookT)
				close(block)
			}
			if tc.grace > 0 {
				armedTimer(t, clk) // the turn
			}
			if tc.appT > 0 {
				clk.Step(tc.appT)
				close(release)
			} else {
				if tc.grace > 0 {
					clk.Step(time.Duration(tc.grace) * time.Second)
				}
				b.wait(t, s) // signalled while a still runs
				close(release)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got := w.rt.graceOf(s); got != tc.want {
				t.Fatalf("sidecar stopped with grace %v, want %v", got, tc.want)
			}
		})
	}
}

// Closing the syncer (the daemon stopping) ends a sidecar's wait for its
// turn: Close must not wait out the grace period of a pod being deleted
// (systemd would SIGKILL podhost before its last status flush).
func TestCloseEndsTheWaitForTurn(t *testing.T) {
	pod := hookedSidecarPod(false)
	w, _, clk, release, done := terminationWorld(t, pod, 600, nil)
	defer close(release)
	armedTimer(t, clk) // the sidecar waits for its turn
	closed := make(chan struct{})
	go func() { w.s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close still waits for the sidecar's turn")
	}
	select {
	case err := <-done:
		_ = err // ended by Close: with or without an error, it must end
	case <-time.After(5 * time.Second):
		t.Fatal("the termination did not end after Close")
	}
}
