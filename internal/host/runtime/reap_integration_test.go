//go:build integration

package runtime_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// TestExitedTaskDeleted: on a container's exit the runtime records its
// exit in labels and deletes its task, as CRI does on TaskExit: the shim
// closes the log pipes, so a last line without a newline reaches the log
// as an F record while the container is still there.
func TestExitedTaskDeleted(t *testing.T) {
	rt := connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	img := importImage(t, ctx, rt)
	events := rt.Events(ctx)
	id, uid, logPath := newContainer(t, ctx, rt, img, []string{"sh", "-c", "echo one; printf fatal; exit 1"})
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, events, id, runtime.EventExit); ev.ExitCode != 1 {
		t.Fatalf("exit event %+v", ev)
	}
	waitFile(t, logPath, func(s string) bool { return strings.Contains(s, " stdout F fatal\n") })
	waitTaskGone(t, ctx, id)
	_, pc := findContainer(t, ctx, rt, uid, id)
	if pc == nil || pc.State != podstate.StateExited || pc.ExitCode != 1 || pc.Reason != "Error" ||
		pc.FinishedAt.IsZero() || pc.StartedAt.IsZero() || pc.Labels[wellknown.LabelExitCode] != "1" {
		t.Fatalf("after the task went: %+v", pc)
	}
	if err := rt.StartContainer(ctx, id); !errdefs.IsFailedPrecondition(err) {
		t.Fatalf("second start of an exited container: %v", err)
	}
	removeAndCheck(t, ctx, rt, id)
}

// TestExitSeenByList: a container that exited while nobody watched the
// events (podhost down) still has its stopped task, holding the exit
// status and the log pipes; the first list reports the exit from it and
// reaps it in the background: records it, deletes the task (the log is
// complete then). So does a list after a crash between the record and the
// delete (exit recorded, task left). A runtime started afresh reads the
// same exit from the labels.
func TestExitSeenByList(t *testing.T) {
	rt := connect(t)
	ctx := context.Background()
	img := importImage(t, ctx, rt)
	for _, recorded := range []bool{false, true} {
		id, uid, logPath := newContainer(t, ctx, rt, img, []string{"sh", "-c", "echo one; printf fatal; exit 7"})
		if err := rt.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		task := waitTaskStopped(t, ctx, id)
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "fatal") || !strings.Contains(string(b), " stdout F one\n") {
			t.Fatalf("with the stopped task there the shim holds the pipes: the partial line cannot be flushed yet; log:\n%s", b)
		}
		if recorded {
			recordExit(t, ctx, id, task)
		}
		_, pc := findContainer(t, ctx, rt, uid, id)
		if pc.State != podstate.StateExited || pc.ExitCode != 7 || pc.Reason != "Error" || pc.FinishedAt.IsZero() {
			t.Fatalf("recorded %v: exit not seen: %+v", recorded, pc)
		}
		waitTaskGone(t, ctx, id)
		if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), " stdout F fatal\n") {
			t.Fatalf("recorded %v: task deleted, log without the last line:\n%s", recorded, b)
		}
		_, after := findContainer(t, ctx, connect(t), uid, id)
		if after.State != podstate.StateExited || after.ExitCode != 7 || after.Reason != "Error" ||
			!after.FinishedAt.Equal(pc.FinishedAt) || !after.StartedAt.Equal(pc.StartedAt) {
			t.Fatalf("recorded %v: read from the labels: %+v, want exit 7 at %v", recorded, after, pc.FinishedAt)
		}
		removeAndCheck(t, ctx, rt, id)
	}
}

// recordExit writes the exit labels of container id from its stopped
// task, as a podhost killed right after its record would have left them.
func recordExit(t *testing.T, ctx context.Context, id string, task client.Task) {
	t.Helper()
	nctx := env.Context(ctx)
	st, err := task.Status(nctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := env.Client().LoadContainer(nctx, id)
	if err == nil {
		_, err = c.SetLabels(nctx, map[string]string{
			wellknown.LabelExitCode:   fmt.Sprint(st.ExitStatus),
			wellknown.LabelFinishedAt: st.ExitTime.UTC().Format(time.RFC3339Nano),
		})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitTaskStopped waits for container id's task to stop and returns it.
func waitTaskStopped(t *testing.T, ctx context.Context, id string) client.Task {
	t.Helper()
	nctx := env.Context(ctx)
	c, err := env.Client().LoadContainer(nctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := c.Task(nctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := task.Status(nctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == client.Stopped {
			return task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task of %s still %s", id, st.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTaskGone waits until container id has no task.
func waitTaskGone(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	nctx := env.Context(ctx)
	c, err := env.Client().LoadContainer(nctx, id)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := c.Task(nctx, nil)
		if errdefs.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task of %s still there: %v", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
