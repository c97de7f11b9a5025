//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// ctrTimes is one containerd container of a pod, with containerd's own
// timestamps: when it was created and when its task exited.
type ctrTimes struct {
	name     string
	restarts string
	created  time.Time
	exited   time.Time // zero while it runs
}

// containerdTimes lists a pod's containers straight from containerd,
// oldest first.
func containerdTimes(t *testing.T, uid string) []ctrTimes {
	t.Helper()
	ctx := env.Context(context.Background())
	cs, err := env.Client().Containers(ctx, fmt.Sprintf("labels.%q==%s", wellknown.LabelPodUID, uid))
	if err != nil {
		t.Fatal(err)
	}
	var out []ctrTimes
	for _, c := range cs {
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ct := ctrTimes{name: info.Labels[wellknown.LabelContainerName], restarts: info.Labels[wellknown.LabelRestartCount], created: info.CreatedAt}
		resp, err := env.Client().TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: c.ID()})
		if err == nil && resp.Process != nil && resp.Process.ExitedAt != nil && resp.Process.ExitedAt.AsTime().Year() > 2000 {
			ct.exited = resp.Process.ExitedAt.AsTime()
		} else if f, err := time.Parse(time.RFC3339Nano, info.Labels[wellknown.LabelFinishedAt]); err == nil {
			ct.exited = f
		}
		out = append(out, ct)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out
}

// newest is the newest containerd container named name.
func newestCtr(cs []ctrTimes, name string) ctrTimes {
	var n ctrTimes
	for _, c := range cs {
		if c.name == name {
			n = c
		}
	}
	return n
}

// sidecarScript logs its start, optionally crashes once (the first attempt,
// marked in the shared emptyDir), then runs until SIGTERM and logs it.
func sidecarScript(name, before string) string {
	return fmt.Sprintf(`echo %[1]s-start; %[2]s trap 'echo %[1]s-term; exit 0' TERM; while true; do sleep 0.1; done`, name, before)
}

// TestNativeSidecars: two sidecars (one gated by a startupProbe) start in
// order before a run-to-completion main container; a crashing sidecar
// restarts on its own under restartPolicy Never; once main has finished
// the pod Succeeds and the sidecars are stopped after main, in reverse
// order of declaration.
func TestNativeSidecars(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("sc.yaml", podManifest("sc", fmt.Sprintf(`  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  volumes:
  - name: shared
    emptyDir: {}
  initContainers:
  - name: proxy
    image: %[1]s
    restartPolicy: Always
    command: ["sh", "-c", %[2]q]
    startupProbe:
      exec: {command: ["test", "-f", "/tmp/up"]}
      periodSeconds: 1
      failureThreshold: 30
  - name: setup
    image: %[1]s
    command: ["sh", "-c", "echo setup-done"]
  - name: logger
    image: %[1]s
    restartPolicy: Always
    command: ["sh", "-c", %[3]q]
    volumeMounts:
    - {name: shared, mountPath: /shared}
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "echo main-start; sleep 6; echo main-done"]
`, env.ImageRef,
		sidecarScript("proxy", "sleep 2; touch /tmp/up;"),
		sidecarScript("logger", "if [ ! -f /shared/crashed ]; then touch /shared/crashed; sleep 1; exit 1; fi;"))))

	// While main runs: the sidecars are started and ready, the pod Ready.
	p := d.waitPod("sc", 60*time.Second, "main running with both sidecars", func(p *corev1.Pod) bool {
		m, px, lg := containerStatus(p, "main"), containerStatus(p, "proxy"), containerStatus(p, "logger")
		return m != nil && m.State.Running != nil && px != nil && px.State.Running != nil && px.Started != nil && *px.Started && px.Ready &&
			lg != nil && lg.State.Running != nil && lg.RestartCount >= 1 && p.Status.Phase == corev1.PodRunning
	})
	if m := containerStatus(p, "main"); m.RestartCount != 0 {
		t.Fatalf("main restarted: %s", statusSummary(p))
	}
	p = d.waitPod("sc", 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	for _, n := range []string{"proxy", "logger"} {
		if cs := containerStatus(p, n); cs == nil || cs.State.Terminated == nil {
			t.Fatalf("sidecar %s not terminated when the pod Succeeded: %s", n, statusSummary(p))
		}
	}
	if m := containerStatus(p, "main"); m.State.Terminated == nil || m.State.Terminated.ExitCode != 0 {
		t.Fatalf("main: %s", statusSummary(p))
	}

	// The containers' own logs: started, and stopped with SIGTERM.
	if l := readLog(t, d, p, "proxy", 0); l != "proxy-start\nproxy-term\n" {
		t.Errorf("proxy log %q", l)
	}
	if l := readLog(t, d, p, "logger", 0); l != "logger-start\n" {
		t.Errorf("logger's crashed attempt logged %q", l)
	}
	if l := readLog(t, d, p, "logger", 1); l != "logger-start\nlogger-term\n" {
		t.Errorf("logger's restart logged %q", l)
	}
	if l := readLog(t, d, p, "main", 0); l != "main-start\nmain-done\n" {
		t.Errorf("main log %q", l)
	}

	// containerd's timestamps: creation in declaration order, the next init
	// container only after proxy's startup probe passed (≥ 2 s), the
	// sidecars stopped after main exited, logger before proxy.
	cs := containerdTimes(t, string(p.UID))
	var order []string
	for _, c := range cs {
		order = append(order, c.name+"#"+c.restarts)
	}
	if got := strings.Join(order[:4], " "); got != "proxy#0 setup#0 logger#0 main#0" {
		t.Fatalf("creation order %q", order)
	}
	proxy, setup, main, logger := newestCtr(cs, "proxy"), newestCtr(cs, "setup"), newestCtr(cs, "main"), newestCtr(cs, "logger")
	if setup.created.Sub(proxy.created) < 2*time.Second {
		t.Errorf("setup created %v after proxy: before proxy's startup probe could pass", setup.created.Sub(proxy.created))
	}
	if main.exited.IsZero() || logger.exited.IsZero() || proxy.exited.IsZero() {
		t.Fatalf("exit times missing: %+v", cs)
	}
	if !main.exited.Before(logger.exited) || !logger.exited.Before(proxy.exited) {
		t.Errorf("exit order: main %v, logger %v, proxy %v; want main < logger < proxy",
			main.exited.Format(time.StampMicro), logger.exited.Format(time.StampMicro), proxy.exited.Format(time.StampMicro))
	}
}

// TestActiveDeadline: the pod fails with DeadlineExceeded within 1 s of
// its deadline (counted from status.startTime), its container stopped with
// SIGTERM; the deadline holds across a podhost SIGKILL + restart.
func TestActiveDeadline(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	manifest := func(name string, deadline int) string {
		return podManifest(name, fmt.Sprintf(`  activeDeadlineSeconds: %d
  terminationGracePeriodSeconds: 3
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap 'echo term; exit 0' TERM; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done"]
`, deadline, env.ImageRef))
	}
	failed := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed }
	// before: a time at or before the pod's start (its manifest written).
	check := func(name string, deadline time.Duration, before time.Time) {
		t.Helper()
		p := d.waitPod(name, deadline+30*time.Second, "Failed", failed)
		seen := time.Now()
		if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
			t.Fatalf("%s: %s %q %q", name, p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		start := p.Status.StartTime.Time // second precision: at or before the real start
		if seen.Sub(start) < deadline {
			t.Errorf("%s failed %v after startTime, before its deadline %v", name, seen.Sub(start), deadline)
		}
		if before.Before(start) {
			before = start
		}
		if late := seen.Sub(before) - deadline; late > time.Second {
			t.Errorf("%s failed at most %v after its deadline", name, late)
		}
		p = d.waitPod(name, 10*time.Second, "container stopped", func(p *corev1.Pod) bool {
			cs := containerStatus(p, "main")
			return cs != nil && cs.State.Terminated != nil
		})
		if l := readLog(t, d, p, "main", 0); !strings.HasSuffix(l, "term\n") {
			t.Errorf("%s: container not stopped with SIGTERM: log ends %q", name, l[max(0, len(l)-40):])
		}
		if c := newestCtr(containerdTimes(t, string(p.UID)), "main"); c.exited.IsZero() || c.exited.Sub(start) < deadline {
			t.Errorf("%s: containerd exit time %v, startTime %v", name, c.exited, start)
		}
		if p.Status.Phase != corev1.PodFailed || containerStatus(p, "main").RestartCount != 0 {
			t.Errorf("%s after stop: %s", name, statusSummary(p))
		}
	}

	before := time.Now()
	d.writeManifest("dl.yaml", manifest("dl", 4))
	d.waitRunning("dl")
	check("dl", 4*time.Second, before)

	// Across a SIGKILL: podhost dies 1.5 s into the pod's life and comes
	// back; the deadline still counts from the first start.
	before = time.Now()
	d.writeManifest("dl2.yaml", manifest("dl2", 6))
	p := d.waitRunning("dl2")
	d.waitPod("dl2", 10*time.Second, "1.5 s of ticks", func(*corev1.Pod) bool {
		return strings.Contains(readLog(t, d, p, "main", 0), "tick 7\n")
	})
	d.kill(syscall.SIGKILL)
	d.start()
	check("dl2", 6*time.Second, before)
}

// TestSidecarLifecycleHooks: a native sidecar's hooks run as the kubelet
// runs them. Its postStart (which takes a second) has completed before the
// app container starts, and its preStop runs when the pod is deleted,
// before its SIGTERM, which comes after the app container has stopped.
func TestSidecarLifecycleHooks(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	dir := ctlDir(t, d, "hooks")
	d.writeManifest("hk.yaml", podManifest("hk", ctlVolume(dir)+fmt.Sprintf(`  terminationGracePeriodSeconds: 10
  initContainers:
  - name: proxy
    image: %[1]s
    restartPolicy: Always
    command: ["sh", "-c", "trap 'echo term >> /ctl/order; exit 0' TERM; while true; do sleep 0.1; done"]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
    lifecycle:
      postStart: {exec: {command: ["sh", "-c", "sleep 1; echo hooked > /ctl/poststart"]}}
      preStop: {exec: {command: ["sh", "-c", "echo prestop >> /ctl/order"]}}
  containers:
  - name: main
    image: %[1]s
    command: ["sh", "-c", "cat /ctl/poststart; trap 'until grep -q prestop /ctl/order; do sleep 0.05; done; echo main-term >> /ctl/order; exit 0' TERM; while true; do sleep 0.1; done"]
    volumeMounts: [{name: ctl, mountPath: /ctl}]
`, env.ImageRef)))
	p := d.waitRunning("hk")
	if err := waitFor(10*time.Second, func() (bool, error) { return readLog(t, d, p, "main", 0) != "", nil }); err != nil {
		t.Fatalf("main logged nothing: %v", err)
	}
	if l := readLog(t, d, p, "main", 0); l != "hooked\n" {
		t.Fatalf("main started before the sidecar's postStart completed: it read %q", l)
	}
	d.removeManifest("hk.yaml")
	d.waitPodGone(t, p)
	b, err := os.ReadFile(filepath.Join(dir, "order"))
	if err != nil {
		t.Fatal(err)
	}
	// The sidecar's preStop runs when the termination starts, beside
	// main's SIGTERM (main exits only once it has seen the preStop's line:
	// a preStop held until the sidecar's turn would leave main to its
	// SIGKILL, and no main-term); the sidecar's SIGTERM comes last.
	if got := string(b); got != "prestop\nmain-term\nterm\n" {
		t.Fatalf("termination order %q, want the sidecar's preStop, main's exit, then the sidecar's TERM", got)
	}
}
