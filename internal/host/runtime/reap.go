package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// An exited container's task is deleted as soon as podhost sees it
// stopped — its TaskExit event, or a list or refresh finding it STOPPED
// (tasks that exited while podhost was down, a lost event) — as
// containerd's CRI does on TaskExit (handleContainerExit). Only then does
// the shim close its ends of the container's stdout and stderr pipes: the
// log driver reads EOF and writes a last line without a newline as an F
// record, and a group's shim with no task left shuts down.
//
// What podhost reads from a stopped task (exit code and time; OOMKilled
// from the oom label or the OOM event this process saw) is recorded in
// the container's labels first (wellknown.LabelExitCode, LabelFinishedAt,
// LabelOOM: one update), and the task is deleted only once that update
// succeeded. A crash in between leaves a stopped task whose exit is
// recorded: the next look at it deletes it. One reap per container runs
// at a time (reapTask) and reads the labels itself: an exit recorded is
// not written again, so a late duplicate TaskExit cannot change it. The
// first exit this process saw (TaskExit, kept before the event is
// forwarded; a reap's) is kept in memory too (noteExit): a read while the
// shim deletes the task (containerd answers UNKNOWN for it) or after
// containerd removed the task of a killed shim, before any label is
// written, reports it.

// reapTimeout bounds one reap. The shim's delete waits for the log
// driver to exit (it kills it after 12 s).
const reapTimeout = 30 * time.Second

// exitRecord is what podhost keeps of a task's exit.
type exitRecord struct {
	Code int32
	At   time.Time // zero: unknown
	OOM  bool
}

// reapOps is what reaping needs from containerd (containerdReap); unit
// tests fake it.
type reapOps interface {
	// labels reads container id's labels.
	labels(ctx context.Context, id string) (map[string]string, error)
	// setLabels sets these labels of container id, leaving the others.
	setLabels(ctx context.Context, id string, labels map[string]string) error
	// deleteTask deletes id's stopped task; a missing task is nil.
	deleteTask(ctx context.Context, id string) error
}

// reap records ex in container id's labels unless recorded already, then
// deletes its task. known are id's labels as the caller read them; nil:
// reap reads them. A container without wellknown.LabelPodUID is not
// podhost's: left alone.
func reap(ctx context.Context, ops reapOps, id string, known map[string]string, ex exitRecord) error {
	labels := known
	if labels == nil {
		l, err := ops.labels(ctx, id)
		if err != nil {
			return fmt.Errorf("read labels: %w", err)
		}
		labels = l
	}
	if labels[wellknown.LabelPodUID] == "" {
		return nil
	}
	if set := exitLabels(labels, ex); len(set) > 0 {
		if err := ops.setLabels(ctx, id, set); err != nil {
			return fmt.Errorf("record exit: %w", err) // the task stays: its exit is not recorded
		}
	}
	if err := ops.deleteTask(ctx, id); err != nil {
		return fmt.Errorf("delete task: %w", err)
	}
	return nil
}

// exitLabels returns the labels that record ex and that labels lack.
func exitLabels(labels map[string]string, ex exitRecord) map[string]string {
	set := map[string]string{}
	if _, ok := labels[wellknown.LabelExitCode]; !ok {
		set[wellknown.LabelExitCode] = strconv.Itoa(int(ex.Code))
		if !ex.At.IsZero() {
			set[wellknown.LabelFinishedAt] = ex.At.UTC().Format(time.RFC3339Nano)
		}
	}
	if ex.OOM && labels[wellknown.LabelOOM] != "true" {
		set[wellknown.LabelOOM] = "true"
	}
	return set
}

// reapConcurrency bounds the reaps running in the background (a list's:
// the first start after an upgrade finds every exited container's task).
const reapConcurrency = 4

// Back-off of the reaps of a container whose last reap failed: a list or
// read finds its stopped task again at every look.
const (
	reapBackoffMin = time.Second
	reapBackoffMax = time.Minute
)

// reapFailure is the back-off state of a container whose reap failed.
type reapFailure struct {
	n    int
	next time.Time
}

// noteExit remembers ex as container id's exit unless one is known
// already (the first stands: a later TaskExit, such as the 137
// containerd publishes for a shim killed during the delete, does not
// change it) and returns the one kept.
func (r *Runtime) noteExit(id string, ex exitRecord) exitRecord {
	r.exitMu.Lock()
	defer r.exitMu.Unlock()
	if old, ok := r.exits[id]; ok {
		old.OOM = old.OOM || ex.OOM
		r.exits[id] = old
		return old
	}
	if r.exits == nil {
		r.exits = map[string]exitRecord{}
	}
	r.exits[id] = ex
	return ex
}

// exitSeen is container id's exit this process saw (TaskExit, a reap).
func (r *Runtime) exitSeen(id string) (exitRecord, bool) {
	r.exitMu.Lock()
	defer r.exitMu.Unlock()
	ex, ok := r.exits[id]
	return ex, ok
}

// forgetExit drops what this process knows of container id's exit and
// reaps (RemoveContainer; a reap that found the container gone).
func (r *Runtime) forgetExit(id string) {
	r.exitMu.Lock()
	delete(r.exits, id)
	delete(r.reapFails, id)
	r.exitMu.Unlock()
}

// reapDue reports whether container id may be reaped now: not while the
// back-off of a failed reap runs.
func (r *Runtime) reapDue(id string) bool {
	r.exitMu.Lock()
	defer r.exitMu.Unlock()
	f, ok := r.reapFails[id]
	return !ok || !time.Now().Before(f.next)
}

// reapFailed starts or extends container id's back-off and logs the
// failure: at Warn the first time, at Debug while it repeats.
func (r *Runtime) reapFailed(id string, err error) {
	r.exitMu.Lock()
	if r.reapFails == nil {
		r.reapFails = map[string]reapFailure{}
	}
	f := r.reapFails[id]
	f.n++
	f.next = time.Now().Add(min(reapBackoffMin<<min(f.n-1, 10), reapBackoffMax))
	r.reapFails[id] = f
	r.exitMu.Unlock()
	if f.n == 1 && !r.closed.Load() {
		r.log().Warn("delete exited task", "container", id, "err", err)
	} else {
		r.log().Debug("delete exited task", "container", id, "err", err, "failures", f.n)
	}
}

// reapTask reaps container id's exited task (see reap) unless its back-off
// runs. One reap per container runs at a time: a caller finding one in
// flight joins it, and RemoveContainer's task delete waits for it (two
// deletes of one task can close the shim connection). The reap runs on
// its own context (ctx's values, not its cancellation) bounded by
// reapTimeout, as CRI's, so a cancelled request or a shutdown does not cut
// a delete short; background reaps (wait false) are bounded by
// reapConcurrency. With wait, reapTask returns once the reap did, or ctx
// is done, and reports whether the task is gone; without, it returns at
// once (false) and the reap finishes in the background. A failure is
// logged, and the next look after the back-off tries again.
func (r *Runtime) reapTask(ctx context.Context, id string, ex exitRecord, wait bool) bool {
	if !r.reapDue(id) {
		return false
	}
	rctx := r.nsctx(context.WithoutCancel(ctx))
	ch := r.reapFlight.DoChan(id, func() (any, error) {
		if !r.reapStarted() {
			return nil, errReapsClosed
		}
		defer r.reaps.Done()
		if !wait { // queued behind reapConcurrency others: no timeout runs while it waits
			select {
			case r.reapSlots <- struct{}{}:
				defer func() { <-r.reapSlots }()
			case <-r.reapsClosing:
				return nil, errReapsClosed
			}
		}
		rctx, cancel := context.WithTimeout(rctx, reapTimeout)
		defer cancel()
		unlock, err := r.reapLocks.lock(rctx, id)
		if err != nil {
			return nil, err
		}
		defer unlock()
		ex := r.noteExit(id, ex)
		err = reap(rctx, r.reaper, id, nil, ex)
		switch {
		case err == nil:
			r.exitMu.Lock()
			delete(r.reapFails, id)
			r.exitMu.Unlock()
		case errdefs.IsNotFound(err): // the container was removed meanwhile
			r.forgetExit(id)
			err = nil
		default:
			r.reapFailed(id, err)
		}
		return nil, err
	})
	if !wait {
		return false
	}
	select {
	case res := <-ch:
		return res.Err == nil
	case <-ctx.Done():
		return false
	}
}

// errReapsClosed ends a reap asked for once Close began.
var errReapsClosed = errors.New("runtime closing: reap left to the next start")

// closeReapWait bounds how long Close waits for reaps running: a delete
// cut short by closing the client leaves containerd's task record, and the
// shim idle, until the container's removal.
const closeReapWait = 5 * time.Second

// reapStarted counts a reap in r.reaps unless Close began.
func (r *Runtime) reapStarted() bool {
	r.reapsMu.Lock()
	defer r.reapsMu.Unlock()
	if r.reapsDone {
		return false
	}
	r.reaps.Add(1)
	return true
}

// closeReaps stops new reaps, ends queued ones and waits up to
// closeReapWait for those running.
func (r *Runtime) closeReaps() {
	r.reapsMu.Lock()
	if r.reapsDone {
		r.reapsMu.Unlock()
		return
	}
	r.reapsDone = true
	close(r.reapsClosing)
	r.reapsMu.Unlock()
	done := make(chan struct{})
	go func() { r.reaps.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeReapWait):
		r.log().Warn("closing with reaps still running: their tasks are deleted when their containers are removed", "waited", closeReapWait)
	}
}

// containerdReap is reapOps over r's containerd client.
type containerdReap struct{ r *Runtime }

func (c containerdReap) labels(ctx context.Context, id string) (map[string]string, error) {
	ctr, err := c.r.client.ContainerService().Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return ctr.Labels, nil
}

func (c containerdReap) setLabels(ctx context.Context, id string, labels map[string]string) error {
	paths := make([]string, 0, len(labels))
	for k := range labels {
		paths = append(paths, "labels."+k)
	}
	_, err := c.r.client.ContainerService().Update(ctx, containers.Container{ID: id, Labels: labels}, paths...)
	return err
}

// deleteTask asks containerd's task service directly, as CRI does: it
// also drops the record of a task its shim deleted already (a delete cut
// short), which shuts that shim down when it serves nothing else.
func (c containerdReap) deleteTask(ctx context.Context, id string) error {
	_, err := c.r.client.TaskService().Delete(ctx, &tasksapi.DeleteTaskRequest{ContainerID: id})
	if err = errgrpc.ToNative(err); errdefs.IsNotFound(err) {
		return nil
	}
	return err
}
