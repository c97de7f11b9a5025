package runtime

import (
	"context"
	"fmt"
	"strconv"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"

	"github.com/podhost/podhost/internal/podstate"
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
// the container's labels first (podstate.LabelExitCode, LabelFinishedAt,
// LabelOOM: one update), and the task is deleted only once that update
// succeeded. A crash in between leaves a stopped task whose exit is
// recorded: the next look at it deletes it. An exit the caller's labels
// show recorded is not written again (a read racing an event's reap may
// write it twice: the task's status and its TaskExit's are the shim's
// same), so a late duplicate TaskExit cannot change it.

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
// reap reads them. A container without podstate.LabelPodUID is not
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
	if labels[podstate.LabelPodUID] == "" {
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
	if _, ok := labels[podstate.LabelExitCode]; !ok {
		set[podstate.LabelExitCode] = strconv.Itoa(int(ex.Code))
		if !ex.At.IsZero() {
			set[podstate.LabelFinishedAt] = ex.At.UTC().Format(time.RFC3339Nano)
		}
	}
	if ex.OOM && labels[podstate.LabelOOM] != "true" {
		set[podstate.LabelOOM] = "true"
	}
	return set
}

// reapTask reaps container id's exited task (see reap), bounded by
// reapTimeout. It reports whether the task is gone; a failure is logged
// and left to the next look at the container.
func (r *Runtime) reapTask(ctx context.Context, id string, known map[string]string, ex exitRecord) bool {
	ctx, cancel := context.WithTimeout(r.nsctx(ctx), reapTimeout)
	defer cancel()
	err := reap(ctx, containerdReap{r}, id, known, ex)
	switch {
	case err == nil:
		return true
	case errdefs.IsNotFound(err): // the container was removed meanwhile
		return true
	case ctx.Err() != nil:
		r.log().Debug("delete exited task", "container", id, "err", err)
	default:
		r.log().Warn("delete exited task", "container", id, "err", err)
	}
	return false
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
