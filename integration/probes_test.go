//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ctlDir makes a host dir the test controls a pod through (hostPath /ctl).
func ctlDir(t *testing.T, d *podhostd, name string) string {
	t.Helper()
	dir := filepath.Join(d.dir, "ctl-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func ctlVolume(dir string) string {
	return fmt.Sprintf(`  volumes:
  - name: ctl
    hostPath: {path: %s, type: Directory}
`, dir)
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// containerReady: the named container runs, has started and its readiness
// is ready; the pod's Ready condition agrees.
func containerReady(name string, ready bool) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == name {
				podReady := condStatus(p, corev1.PodReady) == corev1.ConditionTrue
				return cs.State.Running != nil && cs.Started != nil && *cs.Started && cs.Ready == ready && podReady == ready
			}
		}
		return false
	}
}

func condStatus(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// waitEvent waits for an event of pod name whose reason is reason and whose
// message contains msg.
func (d *podhostd) waitEvent(name, reason, msg string, timeout time.Duration) {
	d.t.Helper()
	var seen []string
	err := waitFor(timeout, func() (bool, error) {
		evs, err := d.client.Events(context.Background(), "default", name)
		seen = seen[:0]
		for _, e := range evs {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == reason && strings.Contains(e.Message, msg) {
				return true, nil
			}
		}
		return false, err
	})
	if err != nil {
		d.t.Fatalf("pod %s: no event %s %q: %v; events:\n%s", name, reason, msg, err, strings.Join(seen, "\n"))
	}
}

func restarts(name string, atLeast int32) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == name {
				return cs.RestartCount >= atLeast
			}
		}
		return false
	}
}

// TestProbeReadinessHTTPGet: httpd serves only once the test creates a
// file, so the pod runs unready (READY 0/1) until then, ready (1/1) after.
func TestProbeReadinessHTTPGet(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := ctlDir(t, d, "web")
	d.writeManifest("web.yaml", podManifest("web", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: %s
    command: ["sh", "-c", "mkdir -p /www && echo ok > /www/index.html && while [ ! -f /ctl/serve ]; do sleep 0.1; done; exec httpd -f -p 8080 -h /www"]
    ports: [{name: http, containerPort: 8080}]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    readinessProbe:
      httpGet: {path: /index.html, port: http, httpHeaders: [{name: X-Probe, value: "1"}]}
      periodSeconds: 1
%s`, env.ImageRef, ctlVolume(ctl))))
	d.waitPod("web", 60*time.Second, "running, not ready", containerReady("web", false))
	d.waitEvent("web", "Unhealthy", "Readiness probe failed:", 20*time.Second)
	touch(t, filepath.Join(ctl, "serve"))
	p := d.waitPod("web", 30*time.Second, "ready", containerReady("web", true))
	if p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("readiness failures restarted the container: %s", statusSummary(p))
	}
}

// TestProbeLivenessExecRestarts: the liveness command fails once the
// container removes its health file; podhost kills the container and the
// restart policy starts a new one, which is healthy again at first.
func TestProbeLivenessExecRestarts(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("live.yaml", podManifest("live", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; exec sleep 600"]
    livenessProbe:
      exec: {command: ["test", "-f", "/tmp/healthy"]}
      periodSeconds: 1
      failureThreshold: 2
`, env.ImageRef)))
	d.waitRunning("live")
	p := d.waitPod("live", 60*time.Second, "restarted after failing liveness", restarts("main", 1))
	d.waitEvent("live", "Unhealthy", "Liveness probe failed", 5*time.Second)
	d.waitEvent("live", "Killing", "Container main failed liveness probe, will be restarted", 5*time.Second)
	if lt := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; lt == nil {
		t.Fatalf("no last termination state: %s", statusSummary(p))
	}
	d.waitPod("live", 30*time.Second, "running again", allRunning)
}

// TestProbeStartupGatesLiveness: a liveness probe that would fail right
// away does not run until the startup probe succeeded; until then the
// container is not started and not ready. A startup probe that never
// succeeds kills its container.
func TestProbeStartupGatesLiveness(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("slow.yaml", podManifest("slow", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "sleep 4; touch /tmp/up; exec sleep 600"]
    startupProbe:
      exec: {command: ["test", "-f", "/tmp/up"]}
      periodSeconds: 1
      failureThreshold: 30
    livenessProbe:
      exec: {command: ["test", "-f", "/tmp/up"]}
      periodSeconds: 1
      failureThreshold: 1
`, env.ImageRef)))
	d.writeManifest("never.yaml", podManifest("never", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %[1]s
    command: ["sleep", "600"]
    startupProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 2
`, env.ImageRef)))
	d.waitPod("slow", 60*time.Second, "running, not started", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return allRunning(p) && cs[0].Started != nil && !*cs[0].Started && !cs[0].Ready
	})
	p := d.waitPod("slow", 30*time.Second, "started and ready", containerReady("main", true))
	if rc := p.Status.ContainerStatuses[0].RestartCount; rc != 0 {
		t.Fatalf("liveness ran before startup succeeded: %d restarts", rc)
	}
	d.waitPod("never", 60*time.Second, "restarted after failing startup", restarts("main", 1))
	d.waitEvent("never", "Killing", "Container main failed startup probe, will be restarted", 5*time.Second)
	evs, err := d.client.Events(context.Background(), "default", "slow")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(e.Message, "Liveness probe failed") || e.Reason == "Killing" {
			t.Fatalf("slow pod: unexpected event %s: %s", e.Reason, e.Message)
		}
	}
}

// TestProbeReadinessTCPSocket: ready while a TCP port accepts connections,
// unready again once it closes (the container keeps running).
func TestProbeReadinessTCPSocket(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctl := ctlDir(t, d, "tcp")
	script := "while [ ! -f /ctl/open ]; do sleep 0.1; done; httpd -p 9000 -h /; " +
		"while [ -f /ctl/open ]; do sleep 0.1; done; killall httpd; exec sleep 600"
	d.writeManifest("tcp.yaml", podManifest("tcp", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: srv
    image: %s
    command: ["sh", "-c", %q]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    readinessProbe:
      tcpSocket: {port: 9000}
      periodSeconds: 1
      failureThreshold: 2
%s`, env.ImageRef, script, ctlVolume(ctl))))
	d.waitPod("tcp", 60*time.Second, "running, not ready", containerReady("srv", false))
	touch(t, filepath.Join(ctl, "open"))
	d.waitPod("tcp", 30*time.Second, "ready", containerReady("srv", true))
	if err := os.Remove(filepath.Join(ctl, "open")); err != nil {
		t.Fatal(err)
	}
	p := d.waitPod("tcp", 30*time.Second, "unready again", containerReady("srv", false))
	if p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("readiness restarted the container: %s", statusSummary(p))
	}
}
