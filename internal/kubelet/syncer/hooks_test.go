package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/prober"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// hookPod is worldPod with exec hooks on every container: the command's
// first word names the hook in fakeHooks' records ("" for none).
func hookPod(preStop, postStart string, containers ...string) *corev1.Pod {
	pod := worldPod(corev1.RestartPolicyAlways, containers...)
	for i := range pod.Spec.Containers {
		lc := &corev1.Lifecycle{}
		if preStop != "" {
			lc.PreStop = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{preStop}}}
		}
		if postStart != "" {
			lc.PostStart = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{postStart}}}
		}
		pod.Spec.Containers[i].Lifecycle = lc
	}
	return pod
}

func (w *world) containerID(t *testing.T, uid, name string) string {
	t.Helper()
	w.rt.mu.Lock()
	defer w.rt.mu.Unlock()
	for _, c := range w.rt.pods[types.UID(uid)].Containers {
		if c.Name == name && c.State == podstate.StateRunning {
			return c.ID
		}
	}
	t.Fatalf("no running container %s", name)
	return ""
}

// waitTimer waits until runPreStop armed its grace timer on the fake clock.
func (w *world) waitTimer(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !w.clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no grace timer armed")
		}
		time.Sleep(time.Millisecond)
	}
}

func terminate(w *world, pod *corev1.Pod) error {
	return w.s.SyncTerminatingPod(context.Background(), pod, nil, 5)
}

// The preStop hook runs before the stop signal, once, and a hook that
// returns at once leaves the stop the whole grace period.
func TestPreStopRunsBeforeTheSignal(t *testing.T) {
	w := newWorld()
	pod := hookPod("prestop", "", "a", "b")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	a := w.containerID(t, "uid-1", "a")
	if err := terminate(w, pod); err != nil {
		t.Fatal(err)
	}
	runs := w.hooks.list()
	slices.Sort(runs)
	if want := []string{"prestop a stops=0", "prestop b stops=0"}; !slices.Equal(runs, want) {
		t.Fatalf("hooks %q, want %q", runs, want)
	}
	if w.rt.stopCount(a) != 1 || w.rt.graceOf(a) != 5*time.Second {
		t.Fatalf("stops %d grace %v, want 1 with 5s", w.rt.stopCount(a), w.rt.graceOf(a))
	}
}

// Grace accounting: the hook's time counts against the grace period, the
// signal gets what is left, at least 2 s; a hook still running when the
// grace period ends is cut off.
func TestPreStopGraceAccounting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		took    time.Duration // fake time the hook takes; 0: it hangs
		want    time.Duration
		cutOffs int
	}{
		{"hook takes 1.5s of 5s", 1500 * time.Millisecond, 3500 * time.Millisecond, 0},
		{"hook takes 4s of 5s: 2s minimum", 4 * time.Second, 2 * time.Second, 0},
		{"hook hangs: cut off at 5s", 0, 2 * time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			pod := hookPod("prestop", "", "a")
			if _, err := syncOnce(t, w, pod); err != nil {
				t.Fatal(err)
			}
			a := w.containerID(t, "uid-1", "a")
			release := make(chan struct{})
			w.hooks.block = release
			done := make(chan error, 1)
			go func() { done <- terminate(w, pod) }()
			w.waitTimer(t)
			if tc.took > 0 {
				w.clk.Step(tc.took)
				close(release)
			} else {
				w.clk.Step(5 * time.Second)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if g := w.rt.graceOf(a); g != tc.want {
				t.Fatalf("stop grace %v, want %v", g, tc.want)
			}
			// The cut-off hook ends after the signal went (it is not waited for).
			deadline := time.Now().Add(5 * time.Second)
			for w.hooks.cutOffs() != tc.cutOffs && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if n := w.hooks.cutOffs(); n != tc.cutOffs {
				t.Fatalf("hooks cut off: %d, want %d", n, tc.cutOffs)
			}
		})
	}
}

// A failing preStop records FailedPreStopHook and the stop proceeds.
func TestPreStopFailureStillStops(t *testing.T) {
	w := newWorld()
	w.hooks.fail["prestop"] = true
	pod := hookPod("prestop", "", "a")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	a := w.containerID(t, "uid-1", "a")
	if err := terminate(w, pod); err != nil {
		t.Fatal(err)
	}
	if w.rt.stopCount(a) != 1 {
		t.Fatal("container not stopped after its hook failed")
	}
	// The handler's output stays out of the event (the kubelet's
	// executePreStopHook: it may hold secrets).
	if !slices.Contains(w.obs.eventList(), "Warning FailedPreStopHook PreStopHook failed") ||
		strings.Contains(strings.Join(w.obs.eventList(), "\n"), "prestop failed") {
		t.Fatalf("events %q", w.obs.eventList())
	}
}

// A liveness kill whose sync is cancelled by a kill request (its hook
// still running): the termination joins the stop, the hook runs once.
func TestPreStopOncePerStopAcrossCancelledSync(t *testing.T) {
	w := newWorld()
	pod := hookPod("prestop", "", "a")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	a := w.containerID(t, "uid-1", "a")
	release, started := make(chan struct{}), make(chan string, 4)
	w.hooks.block, w.hooks.started = release, started
	w.prb.set("a", prober.Unhealthy{ContainerID: a, Reason: prober.ReasonLiveness})
	ctx, cancel := context.WithCancel(context.Background())
	synced := make(chan error, 1)
	go func() {
		running, _ := w.rt.ListPod(ctx, pod.UID)
		_, err := w.s.SyncPod(ctx, podworkers.SyncPodSync, pod, running)
		synced <- err
	}()
	<-started
	cancel() // the kill request
	if err := <-synced; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled sync: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- terminate(w, pod) }()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if runs := w.hooks.list(); len(runs) != 1 || w.rt.stopCount(a) != 1 {
		t.Fatalf("hooks %q, stops %d: want one of each", runs, w.rt.stopCount(a))
	}
}

// An edit stops the old container with the hook it was created with.
func TestEditRunsTheOldVersionsPreStop(t *testing.T) {
	w := newWorld()
	pod := hookPod("old", "", "a")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	edited := hookPod("new", "", "a")
	edited.Annotations[wellknown.AnnotationConfigHash] = "h2"
	edited.Annotations[wellknown.AnnotationIdentityHash] = "id2" // the hook is part of the identity
	if _, err := syncOnce(t, w, edited); err != nil {
		t.Fatal(err)
	}
	if runs := w.hooks.list(); !slices.Equal(runs, []string{"old a stops=0"}) {
		t.Fatalf("hooks %q", runs)
	}
}

// An orphan (no pod spec: podhost restarted after its manifest went) runs
// the hook recorded in its label; named ports are resolved in the label.
func TestOrphanRunsPreStopFromLabel(t *testing.T) {
	w := newWorld()
	pod := hookPod("prestop", "", "a")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	running, _ := w.rt.ListPod(context.Background(), pod.UID)
	if err := w.s.SyncTerminatingRuntimePod(context.Background(), running); err != nil {
		t.Fatal(err)
	}
	if runs := w.hooks.list(); !slices.Equal(runs, []string{"prestop a stops=0"}) {
		t.Fatalf("hooks %q", runs)
	}
	c := &corev1.Container{Name: "a", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}},
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/q", Port: intstr.FromString("web")}}}}
	var h corev1.LifecycleHandler
	if err := json.Unmarshal([]byte(w.s.preStopLabel(c)), &h); err != nil || h.HTTPGet.Port != intstr.FromInt(8080) {
		t.Fatalf("label %q: %v", w.s.preStopLabel(c), err)
	}
}

// postStart runs right after the start and the next container waits for
// it; a failing one kills the container (preStop included), records
// FailedPostStartHook and PostStartHookError, and the container restarts.
func TestPostStart(t *testing.T) {
	w := newWorld()
	pod := hookPod("prestop", "poststart", "a", "b")
	started := make(chan string, 8)
	w.hooks.started = started
	w.hooks.fail["poststart"] = true
	release := make(chan struct{})
	w.hooks.block = release
	synced := make(chan error, 1)
	go func() { _, err := syncOnce(t, w, pod); synced <- err }()
	if rec := <-started; rec != "poststart a stops=0" {
		t.Fatalf("first hook %q", rec)
	}
	w.rt.mu.Lock()
	calls := slices.Clone(w.rt.calls)
	w.rt.mu.Unlock()
	if slices.Contains(calls, "create b") {
		t.Fatalf("b created while a's postStart runs: %q", calls)
	}
	w.hooks.mu.Lock()
	w.hooks.block = nil
	w.hooks.mu.Unlock()
	close(release)
	err := <-synced
	if err == nil || !strings.Contains(err.Error(), "PostStartHookError") {
		t.Fatalf("sync: %v", err)
	}
	want := []string{"poststart a stops=0", "prestop a stops=0", "poststart b stops=0", "prestop b stops=0"}
	if runs := w.hooks.list(); !slices.Equal(runs, want) {
		t.Fatalf("hooks %q, want %q", runs, want)
	}
	ev := strings.Join(w.obs.eventList(), "\n")
	// The handler's output only in the waiting message, not in the event
	// (the kubelet's startContainer).
	if !slices.Contains(w.obs.eventList(), "Warning FailedPostStartHook PostStartHook failed") ||
		strings.Contains(ev, "poststart failed") || !strings.Contains(ev, "Normal Killing FailedPostStartHook") {
		t.Fatalf("events:\n%s", ev)
	}
	if st := w.obs.last().ContainerStatuses[0]; st.State.Waiting == nil || st.State.Waiting.Reason != "PostStartHookError" ||
		st.State.Waiting.Message != "poststart failed" {
		t.Fatalf("status %+v", st.State)
	}
	// Restarted per restartPolicy (the first restart is immediate).
	delete(w.hooks.fail, "poststart")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if st := w.obs.last().ContainerStatuses[0]; st.State.Running == nil || st.RestartCount != 1 {
		t.Fatalf("after restart: %+v", st)
	}
}

// A sidecar whose postStart fails is killed (its preStop runs), waits with
// PostStartHookError, and the app container is not started after it; the
// next sync restarts the sidecar although the pod's restartPolicy is
// Never (a sidecar always restarts), and then the app container starts.
func TestSidecarPostStartFails(t *testing.T) {
	w := newWorld()
	pod := hookedSidecarPod(true)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.InitContainers[0].Lifecycle.PostStart = &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"poststart"}}}
	w.hooks.fail["poststart"] = true
	if _, err := syncOnce(t, w, pod); err == nil || !strings.Contains(err.Error(), "PostStartHookError") {
		t.Fatalf("sync: %v", err)
	}
	if runs, want := w.hooks.list(), []string{"poststart s stops=0", "prestop s stops=0"}; !slices.Equal(runs, want) {
		t.Fatalf("hooks %q, want %q", runs, want)
	}
	st := w.obs.last()
	if len(st.InitContainerStatuses) != 1 || st.InitContainerStatuses[0].State.Waiting == nil ||
		st.InitContainerStatuses[0].State.Waiting.Reason != "PostStartHookError" {
		t.Fatalf("sidecar status %+v", st.InitContainerStatuses)
	}
	w.rt.mu.Lock()
	calls := slices.Clone(w.rt.calls)
	w.rt.mu.Unlock()
	if slices.Contains(calls, "create a") {
		t.Fatalf("app container created after its sidecar's postStart failed: %q", calls)
	}
	delete(w.hooks.fail, "poststart")
	for range 3 { // the sidecar again (the first restart is immediate), then the app container
		if _, err := syncOnce(t, w, pod); err != nil {
			t.Fatal(err)
		}
	}
	st = w.obs.last()
	if s := st.InitContainerStatuses[0]; s.State.Running == nil || s.RestartCount != 1 {
		t.Fatalf("sidecar after its restart: %+v", s)
	}
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil {
		t.Fatalf("app container: %+v", st.ContainerStatuses)
	}
}
