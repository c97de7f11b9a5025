package podworkers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
)

const waitTimeout = 10 * time.Second

// call is one recorded handler invocation.
type call struct {
	kind    string // sync | terminating | runtime | terminated
	uid     types.UID
	t       UpdateType
	pod     *corev1.Pod
	running *podstate.Pod
	grace   int64
	ctx     context.Context
}

func (c call) String() string { return fmt.Sprintf("%s(%s)", c.kind, c.uid) }

// fakeHandler records every call, publishes it on calls, then runs the
// optional hook for its kind (default: success).
type fakeHandler struct {
	mu    sync.Mutex
	log   []call
	calls chan call
	hooks map[string]func(call) (bool, error)
	// requeueAfter and settled are returned by every SyncPod.
	requeueAfter time.Duration
	settled      bool
}

func newFakeHandler() *fakeHandler {
	return &fakeHandler{calls: make(chan call, 1000), hooks: map[string]func(call) (bool, error){}}
}

func (h *fakeHandler) hook(kind string, f func(call) (bool, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hooks[kind] = f
}

func (h *fakeHandler) record(c call) (bool, error) {
	h.mu.Lock()
	h.log = append(h.log, c)
	f := h.hooks[c.kind]
	h.mu.Unlock()
	h.calls <- c
	if f == nil {
		return false, nil
	}
	return f(c)
}

func (h *fakeHandler) SyncPod(ctx context.Context, t UpdateType, pod *corev1.Pod, running *podstate.Pod) (SyncResult, error) {
	terminal, err := h.record(call{kind: "sync", uid: pod.UID, t: t, pod: pod, running: running, ctx: ctx})
	h.mu.Lock()
	defer h.mu.Unlock()
	return SyncResult{Terminal: terminal, RequeueAfter: h.requeueAfter, Settled: h.settled}, err
}

func (h *fakeHandler) SyncTerminatingPod(ctx context.Context, pod *corev1.Pod, running *podstate.Pod, grace int64) error {
	_, err := h.record(call{kind: "terminating", uid: pod.UID, pod: pod, running: running, grace: grace, ctx: ctx})
	return err
}

func (h *fakeHandler) SyncTerminatingRuntimePod(ctx context.Context, running *podstate.Pod) error {
	_, err := h.record(call{kind: "runtime", uid: running.UID, running: running, ctx: ctx})
	return err
}

func (h *fakeHandler) SyncTerminatedPod(ctx context.Context, pod *corev1.Pod) error {
	_, err := h.record(call{kind: "terminated", uid: pod.UID, pod: pod, ctx: ctx})
	return err
}

// next waits for the next call.
func (h *fakeHandler) next(t *testing.T) call {
	t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for a handler call; calls so far: %v", h.history())
		return call{}
	}
}

// expect waits for the next call and checks its kind and uid.
func (h *fakeHandler) expect(t *testing.T, kind string, uid types.UID) call {
	t.Helper()
	c := h.next(t)
	if c.kind != kind || c.uid != uid {
		t.Fatalf("got call %v, want %s(%s); history %v", c, kind, uid, h.history())
	}
	return c
}

func (h *fakeHandler) history() []call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]call(nil), h.log...)
}

// blockUntilCancelled is a hook that returns only when the call's ctx ends.
func blockUntilCancelled(c call) (bool, error) {
	<-c.ctx.Done()
	return false, c.ctx.Err()
}

// fakeStore records WorkerRecords.
type fakeStore struct {
	mu      sync.Mutex
	puts    []records.WorkerRecord
	deletes []types.UID
}

func (s *fakeStore) PutWorker(r records.WorkerRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts = append(s.puts, r)
	return nil
}

func (s *fakeStore) DeleteWorker(uid types.UID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deletes = append(s.deletes, uid)
	return nil
}

func (s *fakeStore) phases(uid types.UID) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.puts {
		if r.UID == uid {
			out = append(out, fmt.Sprintf("%s/%d", r.Phase, r.GracePeriod))
		}
	}
	return out
}

type env struct {
	pw    *PodWorkers
	h     *fakeHandler
	clock *testingclock.FakeClock
	store *fakeStore
	// scheduled receives every armed timer delay.
	scheduled chan time.Duration
}

func newEnv(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	e := &env{
		h:         newFakeHandler(),
		clock:     testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		store:     &fakeStore{},
		scheduled: make(chan time.Duration, 1000),
	}
	opts := Options{Clock: e.clock, Store: e.store, Logger: testLogger(t)}
	if mod != nil {
		mod(&opts)
	}
	e.pw = New(e.h, opts)
	e.pw.onSchedule = func(_ types.UID, d time.Duration) { e.scheduled <- d }
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := e.pw.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v (goroutine leak)", err)
		}
	})
	return e
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// waitScheduled waits for the worker to arm its next timer and returns the delay.
func (e *env) waitScheduled(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-e.scheduled:
		return d
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a retry/resync to be scheduled")
		return 0
	}
}

// waitDone waits for the worker goroutine of uid to exit.
func (e *env) waitDone(t *testing.T, uid types.UID) {
	t.Helper()
	e.pw.mu.Lock()
	s := e.pw.statuses[uid]
	e.pw.mu.Unlock()
	if s == nil {
		t.Fatalf("no worker for %s", uid)
	}
	select {
	case <-s.done:
	case <-time.After(waitTimeout):
		t.Fatalf("worker %s did not exit", uid)
	}
}

func newPod(uid, name string, grace int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

func podJSON(t *testing.T, raw []byte) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func ptr[T any](v T) *T { return &v }
