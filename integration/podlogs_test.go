//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/logs"
)

// runPod prints "run <random uuid>" once, then sleeps until SIGTERM; with
// stubborn it ignores SIGTERM (its stop takes the whole grace period, 3 s).
func runPod(name string, stubborn bool) string {
	trap := "trap 'exit 0' TERM"
	if stubborn {
		trap = "trap '' TERM"
	}
	cmd := trap + "; echo run $(cat /proc/sys/kernel/random/uuid); while true; do sleep 0.1; done"
	return podManifest(name, fmt.Sprintf(`  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", %q]
`, env.ImageRef, cmd))
}

func podLogDir(d *podhostd, p *corev1.Pod) string {
	return filepath.Join(d.logDir, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID))
}

// runLines are the "run <uuid>" lines of out.
func runLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "run ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// waitRunLine waits until `podhost logs name` prints a run line, and
// returns the output.
func (d *podhostd) waitRunLine(name string) string {
	d.t.Helper()
	var out string
	if err := waitFor(30*time.Second, func() (bool, error) {
		var err error
		out, err = d.cli("logs", name)
		return err == nil && len(runLines(out)) > 0, nil
	}); err != nil {
		d.t.Fatalf("podhost logs %s: no run line: %q\n%s", name, out, d.logs())
	}
	return out
}

// waitPodGone waits until pod p is out of the API and containerd has no
// container of it left.
func (d *podhostd) waitPodGone(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := waitFor(60*time.Second, func() (bool, error) {
		return d.pod(p.Name) == nil && len(podContainers(t, string(p.UID))) == 0, nil
	}); err != nil {
		t.Fatalf("pod %s not gone: %v\n%s", p.Name, err, d.logs())
	}
}

// startWeb applies pod web (runPod) and returns it once it runs, with
// the run line it logged.
func (d *podhostd) startWeb(stubborn bool) (*corev1.Pod, string) {
	d.t.Helper()
	d.writeManifest("web.yaml", runPod("web", stubborn))
	p := d.waitRunning("web")
	return p, runLines(d.waitRunLine("web"))[0]
}

// checkNewRun: `podhost logs web` and the file of restart on the host each
// hold one run line, not the old run's.
func (d *podhostd) checkNewRun(t *testing.T, p *corev1.Pod, restart int, old string) {
	t.Helper()
	out := d.waitRunLine("web")
	if got := runLines(out); len(got) != 1 || got[0] == old {
		t.Fatalf("logs %q, want one line of the new run (the old was %q)", out, old)
	}
	if got := runLines(readLog(t, d, p, "app", restart)); len(got) != 1 || got[0] == old {
		t.Fatalf("%d.log on the host has %q, want the new run's line only", restart, got)
	}
}

// TestDeletedPodLogDirRemoved: a deleted pod's log directory is gone from
// the host once its containers are, removed by its cleanup (the daemon
// says so), not by the periodic log GC (every 10 s).
func TestDeletedPodLogDirRemoved(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	p, _ := d.startWeb(false)
	dir := podLogDir(d, p)
	if _, err := os.Stat(filepath.Join(dir, "app", "0.log")); err != nil {
		t.Fatalf("log file: %v", err)
	}
	d.removeManifest("web.yaml")
	d.waitPodGone(t, p)
	// The cleanup removes the directory right after the containers: far
	// less than the log GC period.
	if err := waitFor(2*time.Second, func() (bool, error) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err), nil
	}); err != nil {
		t.Fatalf("log dir %s still there after the pod's cleanup\n%s", dir, d.logs())
	}
	// The line comes after the removal: wait for it.
	if err := waitFor(5*time.Second, func() (bool, error) {
		return strings.Contains(grepLines(d.logs(), "removed the logs of a deleted pod"), string(p.UID)), nil
	}); err != nil {
		t.Fatalf("the cleanup did not remove the logs (log GC did?)\n%s", d.logs())
	}
}

// TestReappliedPodLogsFresh: the same manifest (same UID) applied again
// after a delete runs with a log of its own: `podhost logs` and the log
// file on the host have the new run's line only, also when podhost was
// stopped right after the delete and the manifest applied again while it
// was down (the reported case: the old 0.log was appended to).
func TestReappliedPodLogsFresh(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	for _, restart := range []bool{false, true} {
		p, first := d.startWeb(false)
		d.removeManifest("web.yaml")
		d.waitPodGone(t, p)
		if restart {
			d.kill(syscall.SIGTERM)
		}
		d.writeManifest("web.yaml", runPod("web", false))
		if restart {
			d.start()
		}
		again := d.waitRunning("web")
		if again.UID != p.UID {
			t.Fatalf("UID %s, want the same %s", again.UID, p.UID)
		}
		t.Logf("restart=%v", restart)
		d.checkNewRun(t, again, 0, first)
		d.removeManifest("web.yaml")
		d.waitPodGone(t, again)
	}
}

// TestReappliedWhileTerminatingKeepsLogs: applied again while the old
// instance still terminates (it ignores SIGTERM), the pod keeps its logs
// and its exited container: the new run writes the next restart's file, so
// `podhost logs` prints the new run's line only and `logs --previous` the
// old one.
func TestReappliedWhileTerminatingKeepsLogs(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	p, first := d.startWeb(true)
	d.removeManifest("web.yaml")
	if err := waitFor(10*time.Second, func() (bool, error) {
		p := d.pod("web")
		return p != nil && p.DeletionTimestamp != nil, nil
	}); err != nil {
		t.Fatal("pod not listed as terminating after its delete")
	}
	d.writeManifest("web.yaml", runPod("web", true))
	d.waitPod("web", 60*time.Second, "the new run started", func(p *corev1.Pod) bool {
		return allRunning(p) && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	d.checkNewRun(t, p, 1, first)
	if prev := runLines(d.mustCLI("logs", "--previous", "web")); len(prev) != 1 || prev[0] != first {
		t.Fatalf("logs --previous %q, want the old run's %q", prev, first)
	}
}

// fakeLogDriver runs, until the test ends or stop is called, a process
// that looks like a log driver writing path: sh running a script named
// log-driver, so its /proc/<pid>/cmdline is "sh\0log-driver\0<config>".
func fakeLogDriver(t *testing.T, path string) (stop func()) {
	t.Helper()
	dir := t.TempDir()
	// A copy of sh named as the driver (podhost looks at processes of that
	// comm only), running the script named as the driver's command.
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "podhost-log-driver")
	if err := os.WriteFile(bin, sh, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, logs.DriverCommand), []byte("sleep 3600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := logs.DriverArgs(logs.DriverConfig{Path: path})[logs.DriverCommand]
	cmd := &exec.Cmd{Path: bin, Args: []string{"podhost-log-driver", logs.DriverCommand, cfg}, Dir: dir,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// logLine: a line of the daemon's log has every one of subs.
func (d *podhostd) logLine(subs ...string) bool {
	for _, line := range strings.Split(d.logs(), "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			return true
		}
	}
	return false
}

// TestLogRemovalWaitsForLogDriverAcrossCrash: while a log driver still
// writes a deleted pod's log, the pod's cleanup leaves the log dir (and
// says why); podhost SIGKILLed then, the manifest applied again while it is
// down: the pod's first sync finishes the recorded removal once the driver
// is gone, before its container starts, so the new run's log is its own.
func TestLogRemovalWaitsForLogDriverAcrossCrash(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	p, first := d.startWeb(false)
	dir := podLogDir(d, p)
	stopDriver := fakeLogDriver(t, filepath.Join(dir, "app", "0.log"))

	d.removeManifest("web.yaml")
	d.waitPodGone(t, p)
	if err := waitFor(30*time.Second, func() (bool, error) { return d.logLine("logs of a deleted pod stay", "writes "+dir), nil }); err != nil {
		t.Fatalf("the cleanup never said it leaves the logs to the log driver\n%s", d.logs())
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("log dir removed while a log driver writes there: %v", err)
	}
	d.kill(syscall.SIGKILL)
	d.writeManifest("web.yaml", runPod("web", false))
	d.startNoWait()
	if err := waitFor(30*time.Second, func() (bool, error) { return d.logLine("error syncing pod", "writes "+dir), nil }); err != nil {
		t.Fatalf("the pod's first sync did not wait for the log driver\n%s", d.logs())
	}
	if n := len(podContainers(t, string(p.UID))); n != 0 {
		t.Fatalf("%d containers started while the old logs were still there", n)
	}
	stopDriver()
	d.checkNewRun(t, d.waitRunning("web"), 0, first)
}
