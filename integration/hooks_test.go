//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The hook tests' containers append "<what> <uptime>" lines to /ctl/log
// (a hostPath the test reads): the main process on TERM ("TERM"), hooks
// when they run. /proc/uptime is the host's clock, shared by all of them.
const stamp = `$(cut -d" " -f1 /proc/uptime)`

// termLogger traps TERM, logs it and exits (with exit=true) or keeps
// running until SIGKILL.
func termLogger(exit bool) string {
	act := "echo TERM " + stamp + " >> /ctl/log"
	if exit {
		act += "; exit 0"
	}
	return fmt.Sprintf(`trap '%s' TERM; while true; do sleep 1 & wait; done`, act)
}

// hookLog is one line of /ctl/log.
type hookLog struct {
	what string
	at   float64
}

func readHookLog(t *testing.T, ctl string) []hookLog {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ctl, "log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []hookLog
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		at, _ := strconv.ParseFloat(f[1], 64)
		out = append(out, hookLog{f[0], at})
	}
	return out
}

// waitHookLog waits until /ctl/log holds the lines whats, in this order (other lines between
// them allowed), and returns them.
func waitHookLog(t *testing.T, d *podhostd, ctl string, timeout time.Duration, whats ...string) []hookLog {
	t.Helper()
	var got []hookLog
	var last []hookLog
	err := waitFor(timeout, func() (bool, error) {
		last, got = readHookLog(t, ctl), nil
		for _, l := range last {
			if len(got) < len(whats) && l.what == whats[len(got)] {
				got = append(got, l)
			}
		}
		return len(got) == len(whats), nil
	})
	if err != nil {
		raw, _ := os.ReadFile(filepath.Join(ctl, "log"))
		t.Fatalf("/ctl/log: want %q in order, have %q\n%s", whats, raw, d.logs())
	}
	return got
}

// TestHookPreStopExecOnDelete: the preStop exec hook runs before the TERM
// and the hook's time delays it (the grace period covers both).
func TestHookPreStopExecOnDelete(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := ctlDir(t, d, "del")
	d.writeManifest("del.yaml", podManifest("del", fmt.Sprintf(`  terminationGracePeriodSeconds: 10
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", %q]}
%s`, env.ImageRef, termLogger(true), "echo prestop "+stamp+" >> /ctl/log; sleep 1", ctlVolume(ctl))))
	d.waitRunning("del")
	d.removeManifest("del.yaml")
	waitNoContainers(t, d)
	l := waitHookLog(t, d, ctl, time.Second, "prestop", "TERM")
	if gap := l[1].at - l[0].at; gap < 0.9 || gap > 5 {
		t.Fatalf("TERM %.2fs after the hook started, want ~1s (the hook's sleep): %v", gap, l)
	}
}

// httpServer is a main process that serves /cgi-bin/stop on 8080 (busybox
// httpd CGI): each request logs "<what>" to /ctl/log.
func httpServer(what string) string {
	cgi := fmt.Sprintf(`#!/bin/sh\necho %s %s >> /ctl/log\nprintf "Content-Type: text/plain\\r\\n\\r\\nok"\n`, what, stamp)
	// /ctl/up-<what> once the server listens and the TERM trap is set: a
	// container killed before that (Running is reported when the task
	// starts, not when its shell is ready) would log neither.
	logger := strings.Replace(termLogger(true), "TERM; ", "TERM; touch /ctl/up-"+what+"; ", 1)
	return fmt.Sprintf(`mkdir -p /www/cgi-bin && printf '%s' > /www/cgi-bin/stop && chmod +x /www/cgi-bin/stop && httpd -p 8080 -h /www && %s`,
		cgi, logger)
}

// waitUp waits until the container serving httpServer(what) is ready.
func waitUp(t *testing.T, ctl, what string) {
	t.Helper()
	if err := waitFor(30*time.Second, func() (bool, error) {
		_, err := os.Stat(filepath.Join(ctl, "up-"+what))
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the %s server did not come up: %v", what, err)
	}
}

// TestHookPreStopHTTPGetOnDeleteAndEdit: a preStop httpGet (named port,
// header) reaches the pod IP before the TERM, on an edit (the old
// version's hook) and on a delete.
func TestHookPreStopHTTPGetOnDeleteAndEdit(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := ctlDir(t, d, "web")
	manifest := func(what, version string) string {
		return podManifest("web", fmt.Sprintf(`  terminationGracePeriodSeconds: 10
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
    env: [{name: VERSION, value: %q}]
    ports: [{name: http, containerPort: 8080}]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    lifecycle:
      preStop:
        httpGet: {path: /cgi-bin/stop, port: http, httpHeaders: [{name: X-Hook, value: "1"}]}
%s`, env.ImageRef, httpServer(what), version, ctlVolume(ctl)))
	}
	d.writeManifest("web.yaml", manifest("prestop-v1", "1"))
	first := d.waitRunning("web").Status.ContainerStatuses[0].ContainerID
	waitUp(t, ctl, "prestop-v1")
	d.writeManifest("web.yaml", manifest("prestop-v2", "2"))
	waitHookLog(t, d, ctl, 30*time.Second, "prestop-v1", "TERM")
	d.waitPod("web", 60*time.Second, "the edited container runs", func(p *corev1.Pod) bool {
		return allRunning(p) && p.Status.ContainerStatuses[0].ContainerID != first
	})
	waitUp(t, ctl, "prestop-v2")
	d.removeManifest("web.yaml")
	waitNoContainers(t, d)
	waitHookLog(t, d, ctl, time.Second, "prestop-v1", "TERM", "prestop-v2", "TERM")
}

// TestHookPreStopOnLivenessRestart: a liveness kill runs the preStop hook
// before the TERM, then the container restarts.
func TestHookPreStopOnLivenessRestart(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := ctlDir(t, d, "live")
	d.writeManifest("live.yaml", podManifest("live", fmt.Sprintf(`  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    livenessProbe:
      exec: {command: ["test", "-f", "/tmp/healthy"]}
      periodSeconds: 1
      failureThreshold: 1
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", %q]}
%s`, env.ImageRef, "touch /tmp/healthy; (sleep 2; rm /tmp/healthy) & "+termLogger(true), "echo prestop "+stamp+" >> /ctl/log", ctlVolume(ctl))))
	d.waitRunning("live")
	d.waitPod("live", 60*time.Second, "restarted after failing liveness", restarts("main", 1))
	waitHookLog(t, d, ctl, 5*time.Second, "prestop", "TERM")
	d.waitEvent("live", "Killing", "Container main failed liveness probe", 5*time.Second)
}

// TestHookPreStopHangsCutOffAtGrace: a preStop that never returns is cut off
// when the grace period (3 s) ends; the TERM then gets the 2 s minimum and
// a main process that ignores it is killed: hook + signal are bounded by
// grace + 2 s.
func TestHookPreStopHangsCutOffAtGrace(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := ctlDir(t, d, "hang")
	d.writeManifest("hang.yaml", podManifest("hang", fmt.Sprintf(`  terminationGracePeriodSeconds: 3
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", %q]}
%s`, env.ImageRef, termLogger(false), "echo prestop "+stamp+" >> /ctl/log; sleep 600", ctlVolume(ctl))))
	d.waitRunning("hang")
	start := time.Now()
	d.removeManifest("hang.yaml")
	waitNoContainers(t, d)
	took := time.Since(start)
	l := waitHookLog(t, d, ctl, time.Second, "prestop", "TERM")
	if gap := l[1].at - l[0].at; gap < 2.5 || gap > 4.5 {
		t.Fatalf("TERM %.2fs after the hook started, want ~3s (the grace period): %v", gap, l)
	}
	// The TERM got the 2 s minimum, then SIGKILL (the main process
	// ignores TERM): hook 3 s + signal 2 s, then removal and cleanup.
	if !strings.Contains(d.logs(), `msg="grace period over, killing" container=`) || !strings.Contains(d.logs(), "grace=2s") {
		t.Fatalf("no SIGKILL after the 2s minimum:\n%s", d.logs())
	}
	if took < 5*time.Second || took > 30*time.Second {
		t.Fatalf("containers gone %v after delete, want grace 3s + 2s minimum (+ cleanup)", took)
	}
	t.Logf("hook cut off %.2fs after it started; containers gone %v after the delete", l[1].at-l[0].at, took)
}

// TestHookPostStartFailureRestarts: a failing postStart hook kills the
// container, which restarts per restartPolicy; FailedPostStartHook shows
// in describe, its message without the hook's output (the kubelet's
// "PostStartHook failed": the output may hold secrets).
func TestHookPostStartFailureRestarts(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := ctlDir(t, d, "post")
	d.writeManifest("post.yaml", podManifest("post", fmt.Sprintf(`  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", %q]}
%s`, env.ImageRef, termLogger(true), "echo poststart "+stamp+" >> /ctl/log; echo hook-said-no; exit 3", ctlVolume(ctl))))
	d.waitPod("post", 60*time.Second, "restarted after its postStart failed", restarts("main", 1))
	d.waitEvent("post", "FailedPostStartHook", "PostStartHook failed", 5*time.Second)
	waitHookLog(t, d, ctl, 5*time.Second, "poststart", "TERM", "poststart")
	desc := d.mustCLI("describe", "pod", "post")
	if !strings.Contains(desc, "FailedPostStartHook") {
		t.Fatalf("describe lacks FailedPostStartHook:\n%s", desc)
	}
	evs, err := d.client.Events(context.Background(), "default", "post")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(e.Message, "hook-said-no") {
			t.Fatalf("the hook's output is in event %s: %q", e.Reason, e.Message)
		}
	}
}
