//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/testenv"
)

func sleeper(name string, grace int, extra string) string {
	return podManifest(name, fmt.Sprintf(`  terminationGracePeriodSeconds: %d
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap 'echo got TERM; exit 0' TERM; while true; do sleep 0.1; done"]
%s`, grace, env.ImageRef, extra))
}

// TestEditReplacesPodAndDeleteLeavesNothing: editing a manifest terminates
// the old pod (with its grace period) before the new one starts; deleting it
// leaves no container, task, snapshot, netns mount, cgroup or IP lease —
// checked directly, not through podhost.
func TestEditReplacesPodAndDeleteLeavesNothing(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	baseSnaps := snapshotCount(t)
	d.writeManifest("app.yaml", sleeper("app", 5, ""))
	old := d.waitRunning("app")
	oldIDs := podContainers(t, string(old.UID))
	oldLog := holdLog(t, d, old, "main", 0)

	d.writeManifest("app.yaml", sleeper("app", 5, "    env: [{name: VERSION, value: \"2\"}]\n"))
	nw := d.waitPod("app", 60*time.Second, "new UID running", func(p *corev1.Pod) bool {
		return p.UID != old.UID && allRunning(p)
	})
	// The old pod's containers are gone, and its container exited (TERM
	// handled) before the new one started.
	for id := range oldIDs {
		if _, err := env.Client().LoadContainer(env.Context(context.Background()), id); err == nil {
			t.Fatalf("old container %s still exists", id)
		}
	}
	if l := oldLog.messages(t); !strings.Contains(l, "got TERM") {
		t.Fatalf("old container was not stopped gracefully; log:\n%s", l)
	}
	// Its logs went with it, before the new version started.
	if _, err := os.Stat(podLogDir(d, old)); !os.IsNotExist(err) {
		t.Fatalf("old pod's log dir: %v, want it removed", err)
	}
	// The old container's last log line ("got TERM") was written before the
	// new container was even created (containerd's own timestamp, not the
	// second-rounded StartedAt of the API).
	newID := strings.TrimPrefix(nw.Status.ContainerStatuses[0].ContainerID, "containerd://")
	c, err := env.Client().LoadContainer(env.Context(context.Background()), newID)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(env.Context(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	if at := oldLog.modTime(t); at.After(info.CreatedAt) {
		t.Fatalf("old container logged at %v, after the new one was created at %v", at, info.CreatedAt)
	}

	d.removeManifest("app.yaml")
	if err := waitFor(30*time.Second, func() (bool, error) { n, err := countContainers(); return n == 0, err }); err != nil {
		t.Fatalf("containers left after delete: %v", err)
	}
	assertNothingLeft(t, d, baseSnaps)
}

// assertNothingLeft checks the host directly for leftovers of pod uid.
func assertNothingLeft(t *testing.T, d *podhostd, baseSnaps int) {
	t.Helper()
	if err := waitFor(10*time.Second, func() (bool, error) { return snapshotCount(t) == baseSnaps, nil }); err != nil {
		t.Fatalf("snapshots left: %d, want %d", snapshotCount(t), baseSnaps)
	}
	ctx := env.Context(context.Background())
	if tasks, err := env.Client().TaskService().List(ctx, nil); err != nil || len(tasks.Tasks) != 0 {
		t.Fatalf("tasks left: %v %v", tasks, err)
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	runDir := filepath.Join(env.RunDir, filepath.Base(d.dir))
	if strings.Contains(string(mi), runDir) {
		t.Fatalf("mounts left under %s:\n%s", runDir, grepLines(string(mi), runDir))
	}
	// The pod cgroup is the last thing podhost removes, after the containers.
	var left []string
	if err := waitFor(10*time.Second, func() (bool, error) {
		left = podCgroups(d)
		return len(left) == 0, nil
	}); err != nil {
		t.Fatalf("cgroups left: %v", left)
	}
	leases := leaseFiles(t)
	if len(leases) != 0 {
		t.Fatalf("IP leases left: %v", leases)
	}
}

// leaseFiles lists host-local IPAM lease files (named by IP) of the suite's
// CNI network.
func leaseFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(env.Dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.Contains(p, "/networks/") && strings.Count(fi.Name(), ".") == 3 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func logPath(d *podhostd, p *corev1.Pod, container string, restart int) string {
	return filepath.Join(d.logDir, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), container, fmt.Sprintf("%d.log", restart))
}

// readLog returns a container log's messages, without the CRI prefixes
// ("<time> <stream> <P|F> ").
func readLog(t *testing.T, d *podhostd, p *corev1.Pod, container string, restart int) string {
	t.Helper()
	b, _ := os.ReadFile(logPath(d, p, container, restart))
	return criMessages(b)
}

func criMessages(b []byte) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if f := strings.SplitN(line, " ", 4); len(f) == 4 {
			out.WriteString(f[3] + "\n")
		}
	}
	return out.String()
}

// heldLog is a container's log file held open: what its container wrote
// stays readable after its pod was deleted (the pod's logs go with its
// containers).
type heldLog struct{ f *os.File }

// holdLog opens the log of a container that runs.
func holdLog(t *testing.T, d *podhostd, p *corev1.Pod, container string, restart int) heldLog {
	t.Helper()
	f, err := os.Open(logPath(d, p, container, restart))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return heldLog{f}
}

// messages is readLog of the held file.
func (h heldLog) messages(t *testing.T) string {
	t.Helper()
	b, err := io.ReadAll(io.NewSectionReader(h.f, 0, math.MaxInt64))
	if err != nil {
		t.Fatal(err)
	}
	return criMessages(b)
}

// modTime is the held file's last write.
func (h heldLog) modTime(t *testing.T) time.Time {
	t.Helper()
	fi, err := h.f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

// TestRestartPolicies: Always restarts a container that exits 0, OnFailure
// restarts only failures, Never restarts nothing; terminal phases match k8s.
func TestRestartPolicies(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	mk := func(name, policy, script string) {
		d.writeManifest(name+".yaml", podManifest(name, fmt.Sprintf(`  restartPolicy: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
`, policy, env.ImageRef, script)))
	}
	mk("always", "Always", "exit 0")
	mk("onfailure-ok", "OnFailure", "exit 0")
	mk("onfailure-fail", "OnFailure", "exit 3")
	mk("never-fail", "Never", "exit 2")
	mk("never-ok", "Never", "echo done")

	d.waitPod("always", 60*time.Second, "restarted", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 1 && p.Status.Phase == corev1.PodRunning
	})
	d.waitPod("onfailure-ok", 30*time.Second, "Succeeded", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return p.Status.Phase == corev1.PodSucceeded && cs != nil && cs.RestartCount == 0 &&
			cs.State.Terminated != nil && cs.State.Terminated.Reason == "Completed"
	})
	d.waitPod("onfailure-fail", 60*time.Second, "restarted after failure", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 1 && p.Status.Phase != corev1.PodFailed
	})
	d.waitPod("never-fail", 30*time.Second, "Failed", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return p.Status.Phase == corev1.PodFailed && cs != nil && cs.RestartCount == 0 &&
			cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 2 && cs.State.Terminated.Reason == "Error"
	})
	p := d.waitPod("never-ok", 30*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if !strings.Contains(readLog(t, d, p, "main", 0), "done") {
		t.Fatalf("never-ok log lacks output")
	}
}

// TestCrashLoopBackOff: a container that keeps failing shows
// CrashLoopBackOff and waits longer between each restart.
func TestCrashLoopBackOff(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("crash.yaml", podManifest("crash", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "exit 1"]
`, env.ImageRef)))
	var restartAt []time.Time
	seen := int32(-1)
	err := waitFor(75*time.Second, func() (bool, error) {
		p := d.pod("crash")
		if p == nil {
			return false, nil
		}
		if cs := containerStatus(p, "main"); cs != nil && cs.RestartCount != seen {
			seen = cs.RestartCount
			restartAt = append(restartAt, time.Now())
		}
		return seen >= 3, nil
	})
	if err != nil {
		t.Fatalf("restart count stuck at %d: %v", seen, err)
	}
	p := d.waitPod("crash", 30*time.Second, "CrashLoopBackOff", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	n := len(restartAt)
	gap1, gap2 := restartAt[n-2].Sub(restartAt[n-3]), restartAt[n-1].Sub(restartAt[n-2])
	t.Logf("restart gaps: %v then %v", gap1, gap2)
	if gap2 < gap1+3*time.Second {
		t.Fatalf("back-off does not grow: %v then %v (%s)", gap1, gap2, statusSummary(p))
	}
}

// TestImagePullErrors: an unreachable registry gives ErrImagePull then
// ImagePullBackOff; pull policy Never with a missing image gives
// ErrImageNeverPull.
func TestImagePullErrors(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("badimg.yaml", podManifest("badimg", `  containers:
  - name: main
    image: 127.0.0.1:1/nope/missing:1
`))
	d.writeManifest("never.yaml", podManifest("never", `  containers:
  - name: main
    image: podhost.test/not-there:1
    imagePullPolicy: Never
`))
	reasons := map[string]bool{}
	d.waitPod("badimg", 60*time.Second, "ErrImagePull then ImagePullBackOff", func(p *corev1.Pod) bool {
		if cs := containerStatus(p, "main"); cs != nil && cs.State.Waiting != nil {
			reasons[cs.State.Waiting.Reason] = true
		}
		return reasons["ErrImagePull"] && reasons["ImagePullBackOff"]
	})
	d.waitPod("never", 30*time.Second, "ErrImageNeverPull", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ErrImageNeverPull"
	})
}

// TestOOMKilled: a container over its memory limit is OOMKilled.
func TestOOMKilled(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("oom.yaml", podManifest("oom", fmt.Sprintf(`  restartPolicy: Never
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived"]
    resources:
      limits: {memory: 16Mi}
`, env.ImageRef)))
	d.waitPod("oom", 60*time.Second, "OOMKilled", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Terminated != nil && cs.State.Terminated.Reason == "OOMKilled"
	})
}

// TestInitContainersRunInOrder: init containers run one by one to success
// and block the app container until they are done.
func TestInitContainersRunInOrder(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("init.yaml", podManifest("init", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  volumes:
  - name: shared
    emptyDir: {}
  initContainers:
  - name: first
    image: %[1]s
    command: ["sh", "-c", "sleep 1; echo first >> /shared/order"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  - name: second
    image: %[1]s
    command: ["sh", "-c", "test -f /shared/order && echo second >> /shared/order"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  containers:
  - name: app
    image: %[1]s
    command: ["sh", "-c", "echo app >> /shared/order; cat /shared/order; exec sleep 3600"]
    volumeMounts: [{name: shared, mountPath: /shared}]
`, env.ImageRef)))
	sawInit := false
	p := d.waitPod("init", 60*time.Second, "running after init", func(p *corev1.Pod) bool {
		if cs := containerStatus(p, "app"); cs != nil && cs.State.Waiting != nil && p.Status.Phase == corev1.PodPending {
			sawInit = true
		}
		return allRunning(p)
	})
	if !sawInit {
		t.Log("pod was never seen initializing (init containers were fast)")
	}
	if err := waitFor(10*time.Second, func() (bool, error) {
		return strings.Contains(readLog(t, d, p, "app", 0), "first\nsecond\napp"), nil
	}); err != nil {
		t.Fatalf("order wrong; app log:\n%s", readLog(t, d, p, "app", 0))
	}
	for _, name := range []string{"first", "second"} {
		cs := containerStatus(p, name)
		if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
			t.Fatalf("init %s status: %s", name, statusSummary(p))
		}
	}
}

// TestAdoptionAfterSIGKILL: podhost killed with SIGKILL while 10 pods run,
// then started again: the same containers keep running, restart counts are
// unchanged, and the status is right within a second of readiness.
func TestAdoptionAfterSIGKILL(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	for i := 0; i < 10; i++ {
		d.writeManifest(fmt.Sprintf("p%d.yaml", i), sleeper(fmt.Sprintf("p%d", i), 1, ""))
	}
	before := map[string]string{}
	for i := 0; i < 10; i++ {
		p := d.waitRunning(fmt.Sprintf("p%d", i))
		before[p.Name] = p.Status.ContainerStatuses[0].ContainerID
	}
	d.kill(syscall.SIGKILL)
	d.startNoWait()
	start := time.Now()
	d.waitReady(30 * time.Second)
	for name, id := range before {
		p := d.waitPod(name, time.Second, "adopted", allRunning)
		cs := p.Status.ContainerStatuses[0]
		if cs.ContainerID != id || cs.RestartCount != 0 {
			t.Fatalf("%s: container %s restarts %d, want %s with 0", name, cs.ContainerID, cs.RestartCount, id)
		}
	}
	t.Logf("10 pods adopted, status correct %v after restart", time.Since(start))
	if n, _ := countContainers(); n != 10 {
		t.Fatalf("%d containers after adoption, want 10", n)
	}
}

// TestAdmissionRejects: a pod asking for more CPU than the node has is
// Failed with OutOfcpu; a second pod on a taken hostPort is Failed with
// NodePorts (the kubelet's reason); the first pod keeps running. The
// rejected pod, edited to fit, runs.
func TestAdmissionRejects(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ports := fmt.Sprintf("    ports: [{containerPort: 80, hostPort: %d}]\n", testenv.FreePort(t))
	d.writeManifest("a.yaml", sleeper("porta", 1, ports))
	d.waitRunning("porta")
	d.writeManifest("b.yaml", sleeper("portb", 1, ports))
	d.writeManifest("huge.yaml", sleeper("huge", 1, "    resources: {requests: {cpu: \"1000\"}}\n"))
	for name, reason := range map[string]string{"portb": "NodePorts", "huge": "OutOfcpu"} {
		d.waitPod(name, 30*time.Second, reason, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodFailed && p.Status.Reason == reason
		})
	}
	if p := d.pod("porta"); p == nil || !allRunning(p) {
		t.Fatalf("admitted pod disturbed: %s", statusSummary(p))
	}
	if n, _ := countContainers(); n != 1 {
		t.Fatalf("%d containers, want 1 (rejected pods must not run)", n)
	}
	// Lowering the request keeps the UID (an UPDATE): admission runs again
	// and the pod starts, as the kubelet admits an edited static pod.
	uid := d.pod("huge").UID
	d.writeManifest("huge.yaml", sleeper("huge", 1, "    resources: {requests: {cpu: \"10m\"}}\n"))
	if p := d.waitRunning("huge"); p.UID != uid {
		t.Fatalf("UID %s after a resources-only edit, want %s", p.UID, uid)
	}
}
