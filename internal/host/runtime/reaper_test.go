package runtime

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/core/containers"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// gatedReap is reapOps for reaps running concurrently: setLabels and
// deleteTask wait for their gate (nil: none) and count what they did.
type gatedReap struct {
	mu       sync.Mutex
	labelsOf map[string]string
	setGate  chan struct{}
	delGate  chan struct{}
	delErr   error
	sets     int
	deletes  int
	deleting int // deletes in progress
	overlap  bool
	delCtx   []error // ctx.Err() of each delete when it ran
	started  chan string
}

func newGatedReap() *gatedReap {
	return &gatedReap{labelsOf: ours(), started: make(chan string, 16)}
}

func (f *gatedReap) labels(context.Context, string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.labelsOf), nil
}

func (f *gatedReap) setLabels(_ context.Context, _ string, l map[string]string) error {
	f.started <- "set"
	if f.setGate != nil {
		<-f.setGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets++
	maps.Copy(f.labelsOf, l)
	return nil
}

func (f *gatedReap) deleteTask(ctx context.Context, _ string) error {
	f.mu.Lock()
	f.deletes++
	f.deleting++
	f.overlap = f.overlap || f.deleting > 1
	f.mu.Unlock()
	f.started <- "delete"
	if f.delGate != nil {
		<-f.delGate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleting--
	f.delCtx = append(f.delCtx, ctx.Err())
	return f.delErr
}

func (f *gatedReap) get(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// logCount counts log records by level.
type logCount struct {
	mu     sync.Mutex
	levels map[slog.Level]int
}

func (l *logCount) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCount) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.levels[r.Level]++
	return nil
}
func (l *logCount) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCount) WithGroup(string) slog.Handler      { return l }
func (l *logCount) count(level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.levels[level]
}

// reapRuntime is a Runtime without containerd whose reaps go to ops.
func reapRuntime(ops reapOps) (*Runtime, *logCount) {
	logs := &logCount{levels: map[slog.Level]int{}}
	r := newRuntime(nil, "test", nil)
	r.reaper = ops
	r.Logger = slog.New(logs)
	return r, logs
}

// ctrWith is container c1 with labels as a list read them.
func ctrWith(labels map[string]string) containers.Container {
	return containers.Container{ID: "c1", Labels: labels, CreatedAt: exitedAt.Add(-time.Minute)}
}

func waitStep(t *testing.T, f *gatedReap, want string) {
	t.Helper()
	select {
	case got := <-f.started:
		if got != want {
			t.Fatalf("reap step %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s", want)
	}
}

// A read while the TaskExit's reap is in flight — containerd answers
// UNKNOWN for the task whose shim is busy deleting it, or lists no task —
// reports the exit the event brought, not Unknown (the syncer would rerun
// the container) nor 255: before the record (in memory) and after it (the
// labels read again).
func TestReadDuringReapReportsExit(t *testing.T) {
	f := newGatedReap()
	f.setGate, f.delGate = make(chan struct{}), make(chan struct{})
	r, _ := reapRuntime(f)
	ctx := context.Background()
	r.exitEvent(ctx, Event{ContainerID: "c1", Type: EventExit, ExitCode: 3, Time: exitedAt})
	waitStep(t, f, "set")
	listed := ours() // read before the record
	listed[wellknown.LabelStartedAt] = exitedAt.Add(-time.Second).Format(time.RFC3339Nano)
	check := func(when string, pc *podstate.Container) {
		t.Helper()
		if pc.State != podstate.StateExited || pc.ExitCode != 3 || pc.Reason != "Error" || !pc.FinishedAt.Equal(exitedAt) || pc.PID != 0 {
			t.Fatalf("%s: %+v, want exited 3", when, pc)
		}
	}
	unknown := &task.Process{ID: "c1", Pid: 42, Status: task.Status_UNKNOWN}
	for _, wait := range []bool{false, true} {
		rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond) // a waiting read gives up: the reap is gated
		check("task UNKNOWN, before the record", r.toContainer(rctx, ctrWith(maps.Clone(listed)), unknown, wait))
		cancel()
	}
	check("no task listed, before the record", r.toContainer(ctx, ctrWith(maps.Clone(listed)), nil, false))
	close(f.setGate)
	waitStep(t, f, "delete")
	r.forgetExit("c1") // as a new process would: only the labels know
	check("task UNKNOWN, after the record", r.toContainer(ctx, ctrWith(maps.Clone(listed)), unknown, false))
	close(f.delGate)
}

// Reaps of one container are serialised and the first exit stands: a
// second TaskExit (137: containerd's for a shim killed during the delete)
// joins or follows the first reap, never deletes beside it, and a read
// finding the task STOPPED waits for the reap in flight.
func TestReapsSerialised(t *testing.T) {
	f := newGatedReap()
	f.delGate = make(chan struct{})
	r, _ := reapRuntime(f)
	ctx := context.Background()
	r.exitEvent(ctx, Event{ContainerID: "c1", Type: EventExit, ExitCode: 0, Time: exitedAt})
	waitStep(t, f, "set")
	waitStep(t, f, "delete")
	r.exitEvent(ctx, Event{ContainerID: "c1", Type: EventExit, ExitCode: 137, Time: exitedAt.Add(time.Second)})
	stopped := &task.Process{ID: "c1", Status: task.Status_STOPPED, ExitStatus: 0, ExitedAt: timestamppb.New(exitedAt)}
	read := make(chan *podstate.Container)
	go func() { read <- r.toContainer(ctx, ctrWith(ours()), stopped, true) }()
	select {
	case pc := <-read:
		t.Fatalf("read returned during the reap: %+v", pc)
	case <-time.After(50 * time.Millisecond):
	}
	close(f.delGate)
	if pc := <-read; pc.State != podstate.StateExited || pc.ExitCode != 0 || pc.Reason != "Completed" {
		t.Fatalf("read: %+v", pc)
	}
	// A TaskExit after the reap: the exit is recorded already.
	r.exitEvent(ctx, Event{ContainerID: "c1", Type: EventExit, ExitCode: 137, Time: exitedAt.Add(2 * time.Second)})
	waitStep(t, f, "delete")
	waitReaps(r, "c1")
	f.get(func() {
		if f.labelsOf[wellknown.LabelExitCode] != "0" || f.sets != 1 || f.overlap || f.deletes != 2 {
			t.Fatalf("exit label %q, %d records, %d deletes, overlapping %v", f.labelsOf[wellknown.LabelExitCode], f.sets, f.deletes, f.overlap)
		}
	})
	if ex, _ := r.exitSeen("c1"); ex.Code != 0 {
		t.Fatalf("exit in memory %+v", ex)
	}
}

// A list reports a stopped task's exit without waiting for its reap; a
// failing reap is retried only after its back-off, logged at Warn once.
func TestListReapInBackground(t *testing.T) {
	f := newGatedReap()
	f.delGate, f.delErr = make(chan struct{}), errors.New("shim busy")
	r, logs := reapRuntime(f)
	ctx := context.Background()
	stopped := &task.Process{ID: "c1", Status: task.Status_STOPPED, ExitStatus: 2, ExitedAt: timestamppb.New(exitedAt)}
	pc := r.toContainer(ctx, ctrWith(ours()), stopped, false)
	if pc.State != podstate.StateExited || pc.ExitCode != 2 {
		t.Fatalf("list: %+v", pc)
	}
	waitStep(t, f, "set")
	waitStep(t, f, "delete")
	close(f.delGate)
	deadline := time.Now().Add(5 * time.Second)
	for r.reapDue("c1") {
		if time.Now().After(deadline) {
			t.Fatal("no back-off after a failed reap")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for range 3 {
		r.toContainer(ctx, ctrWith(ours()), stopped, false)
		r.toContainer(ctx, ctrWith(ours()), stopped, true)
	}
	f.get(func() {
		if f.deletes != 1 {
			t.Fatalf("%d deletes during the back-off", f.deletes)
		}
	})
	r.exitMu.Lock()
	r.reapFails["c1"] = reapFailure{n: 1} // back-off over
	r.exitMu.Unlock()
	r.toContainer(ctx, ctrWith(ours()), stopped, true) // fails again
	waitStep(t, f, "delete")
	if logs.count(slog.LevelWarn) != 1 || logs.count(slog.LevelDebug) != 1 {
		t.Fatalf("warn %d, debug %d: want the first failure at Warn, the repeat at Debug",
			logs.count(slog.LevelWarn), logs.count(slog.LevelDebug))
	}
	r.exitMu.Lock()
	if f := r.reapFails["c1"]; f.n != 2 || time.Until(f.next) < reapBackoffMin {
		t.Errorf("back-off after two failures: %+v", f)
	}
	r.exitMu.Unlock()
	// A new exit ends the back-off; a removal forgets it all.
	f.get(func() { f.delErr = nil })
	r.exitEvent(ctx, Event{ContainerID: "c1", Type: EventExit, ExitCode: 2, Time: exitedAt})
	waitStep(t, f, "delete")
	waitReaps(r, "c1")
	if !r.reapDue("c1") {
		t.Fatal("back-off after a reap that succeeded")
	}
	r.forgetExit("c1")
	if _, ok := r.exitSeen("c1"); ok {
		t.Fatal("exit kept after forgetExit")
	}
}

// A reap runs to its end when its caller's ctx is cancelled (a request, a
// shutdown): the caller stops waiting, the delete is not cut short.
func TestReapOutlivesCaller(t *testing.T) {
	f := newGatedReap()
	f.delGate = make(chan struct{})
	r, _ := reapRuntime(f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- r.reapTask(ctx, "c1", exitRecord{Code: 1}, true) }()
	waitStep(t, f, "set")
	waitStep(t, f, "delete")
	cancel()
	select {
	case gone := <-done:
		if gone {
			t.Fatal("reported gone before the delete returned")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("caller still waiting after its ctx ended")
	}
	close(f.delGate)
	waitReaps(r, "c1")
	f.get(func() {
		if len(f.delCtx) != 1 || f.delCtx[0] != nil {
			t.Fatalf("delete ctx errors %v, want the delete's ctx alive", f.delCtx)
		}
	})
}

// The container removed meanwhile: the reap is done and forgets it.
func TestReapContainerGone(t *testing.T) {
	r, logs := reapRuntime(&fakeReap{})
	if !r.reapTask(context.Background(), "c1", exitRecord{Code: 1}, true) {
		t.Fatal("reap of a removed container not done")
	}
	if _, ok := r.exitSeen("c1"); ok || logs.count(slog.LevelWarn) != 0 {
		t.Fatalf("exit kept or warned (%d)", logs.count(slog.LevelWarn))
	}
}

// waitReaps waits for the reap of container id in flight, if any.
func waitReaps(r *Runtime, id string) {
	_, _, _ = r.reapFlight.Do(id, func() (any, error) { return nil, nil })
}

// Close waits for a reap running (its delete is not cut short by the
// client's close), ends background reaps still queued for a slot without
// running them, and starts no new one.
func TestCloseReaps(t *testing.T) {
	f := newGatedReap()
	f.delGate = make(chan struct{})
	r, _ := reapRuntime(f)
	ctx := context.Background()
	for range reapConcurrency { // the slots all taken
		r.reapSlots <- struct{}{}
	}
	r.reapTask(ctx, "queued", exitRecord{Code: 1}, false)
	go r.reapTask(ctx, "c1", exitRecord{Code: 1}, true)
	waitStep(t, f, "set")
	waitStep(t, f, "delete")
	closed := make(chan struct{})
	go func() { r.closeReaps(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("closeReaps returned while a delete ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(f.delGate)
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("closeReaps still waiting after the delete returned")
	}
	waitReaps(r, "queued")
	if r.reapTask(ctx, "c2", exitRecord{Code: 1}, true) {
		t.Fatal("a reap ran after close")
	}
	f.get(func() {
		if f.deletes != 1 || f.sets != 1 {
			t.Fatalf("%d label writes, %d deletes: want only c1's", f.sets, f.deletes)
		}
	})
}
