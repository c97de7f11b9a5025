//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
)

// lastLine is a container's last line without a newline, as a CRI record.
const lastLine = " stdout F fatal\n"

// TestLogsLastLineWithoutNewline: a container whose last output has no
// newline exits; once its status says terminated the partial line is in
// its log file as an F record (podhost deleted the exited task, so the
// shim closed the log pipes, as CRI does on the exit), while the
// container is still there, and the exit code is reported; the
// FallbackToLogsOnError message ends with it too.
func TestLogsLastLineWithoutNewline(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("partial.yaml", podManifest("partial", fmt.Sprintf(`  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "echo one; printf fatal; exit 1"]
`, env.ImageRef)))
	p := d.waitPod("partial", 30*time.Second, "terminated", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Terminated != nil
	})
	b, err := os.ReadFile(logPath(d, p, "main", 0))
	if err != nil || !strings.HasSuffix(string(b), lastLine) || !strings.Contains(string(b), " stdout F one\n") {
		t.Fatalf("log file of the terminated container (%v):\n%s", err, b)
	}
	if term := containerStatus(p, "main").State.Terminated; term.ExitCode != 1 || term.Reason != "Error" || term.Message != "one\nfatal\n" {
		t.Fatalf("terminated %+v, want exit code 1 (Error), message the log's lines", term)
	}
	ids := podContainers(t, string(p.UID))
	if len(ids) != 1 {
		t.Fatalf("containers of the pod: %v, want the exited one", ids)
	}
	for id := range ids {
		checkNoTask(t, id)
	}
	if out := d.mustCLI("logs", "partial"); out != "one\nfatal\n" {
		t.Fatalf("podhost logs: %q", out)
	}
	p = d.waitPod("partial", 30*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if cs := containerStatus(p, "main"); cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 {
		t.Fatalf("after Failed: %s", statusSummary(p))
	}
}

// TestExitWhileDownReportedAfterRestart: containers exit while podhost is
// down (SIGKILL); their stopped tasks keep the exit status and the log
// pipes. The restarted podhost reports the exit codes, completes the logs
// (the partial last line), restarts per restartPolicy (restart count 1,
// lastState with the exit code, `logs -p` the exited run) and keeps the
// Never pod's exited container.
func TestExitWhileDownReportedAfterRestart(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := ctlDir(t, d, "exit")
	script := "while [ ! -e /ctl/go ]; do sleep 0.05; done; echo one; printf fatal; exit %d"
	for name, policy := range map[string]string{"never": "Never", "always": "Always"} {
		code := map[string]int{"never": 3, "always": 2}[name]
		d.writeManifest(name+".yaml", podManifest(name, fmt.Sprintf(`  restartPolicy: %s
  terminationGracePeriodSeconds: 1
%s  containers:
  - name: main
    image: %s
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    command: ["sh", "-c", %q]
`, policy, ctlVolume(ctl), env.ImageRef, fmt.Sprintf(script, code))))
	}
	never, always := d.waitRunning("never"), d.waitRunning("always")
	d.kill(syscall.SIGKILL)
	touch(t, filepath.Join(ctl, "go"))
	for _, p := range []*corev1.Pod{never, always} {
		waitTaskStopped(t, p)
		if b, _ := os.ReadFile(logPath(d, p, "main", 0)); strings.Contains(string(b), "fatal") {
			t.Fatalf("%s: partial line logged while the stopped task holds the pipes:\n%s", p.Name, b)
		}
	}

	d.start()
	p := d.waitPod("never", 30*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if cs := containerStatus(p, "main"); cs.RestartCount != 0 || cs.State.Terminated == nil ||
		cs.State.Terminated.ExitCode != 3 || cs.State.Terminated.Reason != "Error" || cs.State.Terminated.FinishedAt.IsZero() {
		t.Fatalf("never: %s", statusSummary(p))
	}
	if b, _ := os.ReadFile(logPath(d, p, "main", 0)); !strings.HasSuffix(string(b), lastLine) {
		t.Fatalf("never: log without the last line:\n%s", b)
	}
	if ids := podContainers(t, string(p.UID)); len(ids) != 1 {
		t.Fatalf("never: containers %v, want the exited one", ids)
	}
	p = d.waitPod("always", 30*time.Second, "restarted", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil
	})
	if last := containerStatus(p, "main").LastTerminationState.Terminated; last.ExitCode != 2 || last.Reason != "Error" {
		t.Fatalf("always: lastState %+v, want exit code 2", last)
	}
	if out := d.mustCLI("logs", "-p", "always"); out != "one\nfatal\n" {
		t.Fatalf("logs -p always: %q", out)
	}
}

// checkNoTask fails unless container id exists without a task.
func checkNoTask(t *testing.T, id string) {
	t.Helper()
	ctx := env.Context(context.Background())
	c, err := env.Client().LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Task(ctx, nil); !errdefs.IsNotFound(err) {
		t.Fatalf("container %s: task of the exited container still there (%v)", id, err)
	}
}

// waitTaskStopped waits until the task of pod p's one container stopped.
func waitTaskStopped(t *testing.T, p *corev1.Pod) {
	t.Helper()
	ctx := env.Context(context.Background())
	err := waitFor(20*time.Second, func() (bool, error) {
		for id := range podContainers(t, string(p.UID)) {
			c, err := env.Client().LoadContainer(ctx, id)
			if err != nil {
				return false, err
			}
			task, err := c.Task(ctx, nil)
			if err != nil {
				return false, err
			}
			st, err := task.Status(ctx)
			return err == nil && st.Status == client.Stopped, err
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s: task not stopped: %v", p.Name, err)
	}
}
