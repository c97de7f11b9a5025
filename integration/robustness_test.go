//go:build integration

package integration

// Robustness: "podhost never loses track of a container, a namespace, an IP
// lease or a cgroup it created — not after a crash, a containerd restart or
// a reboot", and "SIGTERM to podhost stops podhost, not the pods". Every
// check here looks at the host directly (containerd, /proc, mountinfo,
// host-local lease files, iptables), never only at podhost's own view.
// The CNI failure cases are in failpoint_test.go. See docs/robustness.md.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	corev1 "k8s.io/api/core/v1"
)

// reactBound is how fast podhost must react to a container exit. The relist
// runs every 30 s and the pod workers resync every 60 s, so reacting within
// it proves the containerd event path works.
const reactBound = 1500 * time.Millisecond

// TestRobustSIGTERMKeepsPods: SIGTERM stops podhost promptly and cleanly;
// every container keeps running (same task PIDs), no container even sees a
// signal, namespaces and leases stay; the next start adopts them all.
func TestRobustSIGTERMKeepsPods(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	names := []string{"keep-a", "keep-b", "keep-c"}
	for _, n := range names {
		d.writeManifest(n+".yaml", sleeper(n, 5, ""))
	}
	before := map[string]*corev1.Pod{}
	pids := map[string]int{}
	for _, n := range names {
		before[n] = d.waitRunning(n)
		pids[n] = containerPID(t, before[n], "main")
	}
	leases, mounts := leaseOwners(t), mountsUnder(t, runDirOf(d))

	took := d.stop(syscall.SIGTERM, 5*time.Second)
	t.Logf("podhost exited %v after SIGTERM", took)
	for _, n := range names {
		assertTaskPID(t, before[n], "main", pids[n])
		if log := readLog(t, d, before[n], "main", 0); strings.Contains(log, "got TERM") {
			t.Fatalf("%s: container got SIGTERM when podhost stopped", n)
		}
	}
	assertSameStrings(t, "leases", keys(leases), keys(leaseOwners(t)))
	assertSameStrings(t, "sandbox mounts", mounts, mountsUnder(t, runDirOf(d)))

	d.start()
	for _, n := range names {
		p := d.waitPod(n, time.Second, "adopted", allRunning)
		cs, old := p.Status.ContainerStatuses[0], before[n].Status.ContainerStatuses[0]
		if cs.ContainerID != old.ContainerID || cs.RestartCount != 0 || p.Status.PodIP != before[n].Status.PodIP {
			t.Fatalf("%s not adopted: %s, was %s", n, statusSummary(p), statusSummary(before[n]))
		}
		assertTaskPID(t, p, "main", pids[n])
	}
	assertSameStrings(t, "leases after restart", keys(leases), keys(leaseOwners(t)))
}

// TestRobustSIGTERMDuringTermination: SIGTERM while a pod is terminating
// (its container ignores TERM, grace 3 s) does not wait for the grace
// period nor kill the container; the next start resumes the termination and
// leaves nothing.
func TestRobustSIGTERMDuringTermination(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	baseSnaps := snapshotCount(t)
	d.writeManifest("stubborn.yaml", podManifest("stubborn", `  terminationGracePeriodSeconds: 3
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sh", "-c", "trap 'echo got TERM' TERM; while true; do sleep 0.1; done"]
`))
	p := d.waitRunning("stubborn")
	pid := containerPID(t, p, "main")
	d.removeManifest("stubborn.yaml")
	if err := waitFor(10*time.Second, func() (bool, error) { return strings.Contains(readLog(t, d, p, "main", 0), "got TERM"), nil }); err != nil {
		t.Fatalf("container never got SIGTERM:\n%s", d.logs())
	}
	t.Logf("podhost exited %v after SIGTERM", d.stop(syscall.SIGTERM, 2*time.Second))
	assertTaskPID(t, p, "main", pid)
	d.start()
	// The resumed termination is shown, Terminating, until it is over.
	if got := d.pod("stubborn"); alive(pid) && (got == nil || got.DeletionTimestamp == nil) {
		t.Fatalf("after the restart the stopping pod is %s, want it listed Terminating", statusSummary(got))
	}
	waitNoContainers(t, d)
	if err := waitFor(10*time.Second, func() (bool, error) { return d.pod("stubborn") == nil, nil }); err != nil {
		t.Fatal("pod still listed after its termination ended")
	}
	assertNothingLeft(t, d, baseSnaps)
}

// TestRobustManifestDeletedWhileDown: podhost SIGKILLed, the manifest
// deleted while it is down, podhost started again: the orphaned pod is
// terminated gracefully (its TERM trap runs) and nothing is left.
func TestRobustManifestDeletedWhileDown(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	baseSnaps := snapshotCount(t)
	d.writeManifest("orphan.yaml", sleeper("orphan", 10, ""))
	p := d.waitRunning("orphan")
	pid := containerPID(t, p, "main")
	orphanLog := holdLog(t, d, p, "main", 0)

	d.kill(syscall.SIGKILL)
	d.removeManifest("orphan.yaml")
	assertTaskPID(t, p, "main", pid) // podhost's death changed nothing
	start := time.Now()
	d.start()
	if err := waitFor(30*time.Second, func() (bool, error) { n, err := countContainers(); return n == 0, err }); err != nil {
		t.Fatalf("orphaned pod not removed: %v\n%s", err, d.logs())
	}
	t.Logf("orphan removed %v after restart", time.Since(start))
	if l := orphanLog.messages(t); !strings.Contains(l, "got TERM") {
		t.Fatalf("orphan was not stopped gracefully; log:\n%s", l)
	}
	// Its logs go with its containers.
	if err := waitFor(5*time.Second, func() (bool, error) { _, err := os.Stat(podLogDir(d, p)); return os.IsNotExist(err), nil }); err != nil {
		t.Fatalf("orphan's log dir left\n%s", d.logs())
	}
	assertNothingLeft(t, d, baseSnaps)
	assertNoMasquerade(t, nil)
}

// TestRobustManifestEditedWhileDown: podhost SIGKILLed, the manifest
// edited while it is down (a new UID), podhost started again: the old
// version is terminated gracefully before the new one starts, as with an
// edit podhost sees live, and only the new version's sandbox is left.
func TestRobustManifestEditedWhileDown(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("app.yaml", sleeper("app", 10, ""))
	old := d.waitRunning("app")
	oldLog := holdLog(t, d, old, "main", 0)

	d.kill(syscall.SIGKILL)
	d.writeManifest("app.yaml", sleeper("app", 10, "    env: [{name: VERSION, value: \"2\"}]\n"))
	d.start()
	nw := d.waitPod("app", 30*time.Second, "new version running", func(p *corev1.Pod) bool { return p.UID != old.UID && allRunning(p) })
	if err := waitFor(30*time.Second, func() (bool, error) { return len(podContainers(t, string(old.UID))) == 0, nil }); err != nil {
		t.Fatalf("old version's containers never removed: %v\n%s", podContainers(t, string(old.UID)), d.logs())
	}
	if l := oldLog.messages(t); !strings.Contains(l, "got TERM") {
		t.Fatalf("old version not stopped gracefully; log:\n%s", l)
	}
	// The old container's last words ("got TERM") came before the new
	// container was even created (containerd's record, ns precision).
	newID := strings.TrimPrefix(containerStatus(nw, "main").ContainerID, "containerd://")
	info, err := env.Client().ContainerService().Get(env.Context(context.Background()), newID)
	if err != nil {
		t.Fatal(err)
	}
	if at := oldLog.modTime(t); at.After(info.CreatedAt) {
		t.Fatalf("old version still ran (log written %v) after the new one was created at %v", at, info.CreatedAt)
	}
	if leases := leaseOwners(t); len(leases) != 1 || leases[keys(leases)[0]] != nw.Status.PodIP {
		t.Fatalf("leases %v, want only the new version's (%s)", leases, nw.Status.PodIP)
	}
}

// TestRobustKillWhileSandboxIsMade: podhost SIGKILLed at several points
// while it makes a pod's sandbox (from the moment its directory appears to
// some milliseconds later: pinning namespaces, mounting /dev/shm, CNI).
// After each restart the half-made sandbox is gone — no mount, no dir, no
// lease — and the pod runs in a new one.
func TestRobustKillWhileSandboxIsMade(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	baseSnaps := snapshotCount(t)
	sbDir := filepath.Join(runDirOf(d), "sandboxes")
	delays := []time.Duration{0, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond}
	for i, delay := range delays {
		name := fmt.Sprintf("cut%d", i)
		before := dirNames(sbDir)
		d.writeManifest(name+".yaml", sleeper(name, 1, ""))
		if err := waitFast(10*time.Second, func() bool { return len(dirNames(sbDir)) > len(before) }); err != nil {
			t.Fatalf("%s: no sandbox dir appeared:\n%s", name, d.logs())
		}
		time.Sleep(delay) // the kill point, not a wait
		d.kill(syscall.SIGKILL)
		d.start()
		d.waitRunning(name)
	}
	d.waitAllRunning(len(delays), 30*time.Second)
	ids := map[string]bool{}
	for _, n := range dirNames(sbDir) {
		ids[n] = true
	}
	leases := leaseOwners(t)
	netns := netnsPins(t, d)
	if len(ids) != len(delays) || len(leases) != len(delays) || len(netns) != len(delays) {
		t.Fatalf("%d pods, but sandbox dirs %v, leases %v, netns %v", len(delays), keys(ids), leases, netns)
	}
	for _, m := range mountsUnder(t, sbDir) {
		if id := strings.Split(strings.TrimPrefix(m, sbDir+"/"), "/")[0]; leases[id] == "" {
			t.Fatalf("mount %s of a sandbox without a lease", m)
		}
	}
	for i := range delays {
		d.removeManifest(fmt.Sprintf("cut%d.yaml", i))
	}
	waitNoContainers(t, d)
	assertNothingLeft(t, d, baseSnaps)
	if left := dirNames(sbDir); len(left) != 0 {
		t.Fatalf("sandbox dirs left: %v", left)
	}
}

// TestRobustRandomKills: podhost SIGKILLed at random moments, 15 times,
// while pods are added, edited (new UIDs) and removed. Once it settles,
// every pod runs once, in one sandbox (one lease, one netns, one sandbox
// dir, NAT rules of those only); once they are deleted nothing is left.
// PODHOST_CHAOS_SEED=<seed> replays the edits and kill delays of a run.
func TestRobustRandomKills(t *testing.T) {
	d := newPodhostd(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PODHOST_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	baseSnaps := snapshotCount(t)
	const pods = 4
	for round := 0; round < 15; round++ {
		d.startNoWait()
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond) // kill points, not waits
		for i := 0; i < pods; i++ {
			name := fmt.Sprintf("r%d", i)
			if rng.IntN(3) == 0 {
				_ = os.Remove(filepath.Join(d.manifestDir, name+".yaml"))
			} else {
				d.writeManifest(name+".yaml", sleeper(name, 1, fmt.Sprintf("    env: [{name: V, value: \"%d\"}]\n", rng.IntN(2))))
			}
		}
		time.Sleep(time.Duration(rng.IntN(600)) * time.Millisecond)
		d.kill(syscall.SIGKILL)
	}
	for i := 0; i < pods; i++ {
		d.writeManifest(fmt.Sprintf("r%d.yaml", i), sleeper(fmt.Sprintf("r%d", i), 1, ""))
	}
	d.start()
	d.waitAllRunning(pods, 60*time.Second)
	sbDir := filepath.Join(runDirOf(d), "sandboxes")
	if err := waitFor(20*time.Second, func() (bool, error) { // housekeeping runs every 2 s
		n, err := countContainers()
		return n == pods && len(leaseOwners(t)) == pods && len(netnsPins(t, d)) == pods && len(dirNames(sbDir)) == pods, err
	}); err != nil {
		n, _ := countContainers()
		t.Fatalf("%d pods: %d containers, leases %v, netns %v, sandboxes %v", pods, n, leaseOwners(t), netnsPins(t, d), dirNames(sbDir))
	}
	assertSameStrings(t, "sandboxes with NAT rules", keys(leaseOwners(t)), keys(masqueradeOwners(t)))
	for i := 0; i < pods; i++ {
		d.removeManifest(fmt.Sprintf("r%d.yaml", i))
	}
	waitNoContainers(t, d)
	if err := waitFor(10*time.Second, func() (bool, error) {
		return len(mountsUnder(t, runDirOf(d)))+len(leaseOwners(t))+len(podCgroups(d))+len(dirNames(sbDir)) == 0, nil
	}); err != nil {
		t.Fatalf("left: mounts %v, leases %v, cgroups %v, sandboxes %v", mountsUnder(t, runDirOf(d)), leaseOwners(t), podCgroups(d), dirNames(sbDir))
	}
	// Snapshots and leases of creations a kill cut short are collected by
	// housekeeping (docs/robustness.md, "Leases and snapshots").
	assertNothingLeft(t, d, baseSnaps)
	if err := waitFor(10*time.Second, func() (bool, error) { return len(containerdLeases(t)) == 0, nil }); err != nil {
		t.Fatalf("containerd leases left: %v", containerdLeases(t))
	}
	assertNoMasquerade(t, nil)
}

// podCgroups lists pod cgroups (not the QoS-level ones) under d's root.
func podCgroups(d *podhostd) []string {
	var out []string
	for _, ctrl := range []string{"memory", "cpu", "pids"} {
		_ = filepath.Walk(filepath.Join("/sys/fs/cgroup", ctrl, d.cgroupRoot), func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() && strings.HasPrefix(fi.Name(), "pod") && fi.Name() != filepath.Base(d.cgroupRoot) {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// TestRobustExternalKill: a container killed from outside (kill -9 of its
// PID) is restarted per restartPolicy within reactBound: Always restarts
// it, Never leaves it dead (exit 137, pod Failed).
func TestRobustExternalKill(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("always.yaml", sleeper("always", 1, ""))
	d.writeManifest("never.yaml", sleeper("never", 1, "  restartPolicy: Never\n"))
	always, never := d.waitRunning("always"), d.waitRunning("never")

	took := killAndWaitRestart(t, always, "main")
	t.Logf("Always: container restarted %v after kill -9", took)
	d.waitPod("always", 5*time.Second, "restart count 1", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return allRunning(p) && cs.RestartCount == 1
	})

	pid := containerPID(t, never, "main")
	start := time.Now()
	killPID(t, pid)
	p := d.waitPod("never", reactBound, "Failed with exit 137", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return p.Status.Phase == corev1.PodFailed && cs != nil && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 137
	})
	t.Logf("Never: pod Failed %v after kill -9", time.Since(start))
	if cs := containerStatus(p, "main"); cs.RestartCount != 0 || len(podContainers(t, string(p.UID))) != 1 {
		t.Fatalf("Never pod was restarted: %s", statusSummary(p))
	}
}

// TestRobustContainerdRestart: containerd restarted under running pods:
// the pods keep running (same PIDs), their status never wavers, and after
// the restart podhost still sees a container exit at once (its event
// subscription came back) and restarts it.
func TestRobustContainerdRestart(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("steady.yaml", sleeper("steady", 1, ""))
	d.writeManifest("victim.yaml", sleeper("victim", 1, ""))
	steady, victim := d.waitRunning("steady"), d.waitRunning("victim")
	steadyPID, victimPID := containerPID(t, steady, "main"), containerPID(t, victim, "main")
	unchanged := func(old *corev1.Pod) {
		p := d.pod(old.Name)
		if p == nil || !allRunning(p) || p.Status.ContainerStatuses[0].ContainerID != old.Status.ContainerStatuses[0].ContainerID ||
			p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Fatalf("status of %s wavered: %s", old.Name, statusSummary(p))
		}
	}
	restarted := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		restarted <- env.RestartContainerd(ctx)
	}()
	// Watch the API while containerd goes away and comes back, then until
	// podhost's event stream is back: kill only then, since the claim is
	// that the subscription returns, not that a relist mops up.
	deadline := time.Now().Add(30 * time.Second)
	for up := false; !up || !strings.Contains(d.logs(), "event stream re-established"); {
		if time.Now().After(deadline) {
			t.Fatalf("containerd restarted: %v; podhost did not resubscribe to its events:\n%s", up, d.logs())
		}
		select {
		case err := <-restarted:
			if err != nil {
				t.Fatalf("restart containerd: %v", err)
			}
			up = true
		case <-time.After(25 * time.Millisecond):
		}
		unchanged(steady)
		unchanged(victim)
	}
	assertTaskPID(t, steady, "main", steadyPID)
	assertTaskPID(t, victim, "main", victimPID)

	took := killAndWaitRestart(t, victim, "main")
	t.Logf("container restarted %v after kill -9 (after the containerd restart)", took)
	d.waitPod("victim", 5*time.Second, "restart count 1", func(p *corev1.Pod) bool {
		return allRunning(p) && containerStatus(p, "main").RestartCount == 1
	})
	unchanged(steady)
	assertTaskPID(t, steady, "main", steadyPID)
}

// killAndWaitRestart kills container name of p with SIGKILL and waits,
// looking at containerd directly, until a new task of that container runs;
// it fails the test if that takes longer than reactBound.
func killAndWaitRestart(t *testing.T, p *corev1.Pod, name string) time.Duration {
	t.Helper()
	pid := containerPID(t, p, name)
	start := time.Now()
	killPID(t, pid)
	err := waitFor(10*time.Second, func() (bool, error) {
		for _, rt := range runningTasks(t, string(p.UID)) {
			if rt.name == name && rt.pid != pid {
				return true, nil
			}
		}
		return false, nil
	})
	if took := time.Since(start); err != nil || took > reactBound {
		t.Fatalf("%s/%s not restarted within %v of kill -9 (%v, %v): not event-driven", p.Name, name, reactBound, took, err)
	}
	return time.Since(start)
}

type runningTask struct {
	id, name string
	pid      int
}

// runningTasks lists the running tasks of pod uid, from containerd.
func runningTasks(t *testing.T, uid string) []runningTask {
	t.Helper()
	ctx := env.Context(context.Background())
	var out []runningTask
	for id, name := range podContainers(t, uid) {
		c, err := env.Client().LoadContainer(ctx, id)
		if err != nil {
			continue
		}
		task, err := c.Task(ctx, nil)
		if err != nil {
			continue
		}
		if st, err := task.Status(ctx); err == nil && st.Status == client.Running {
			out = append(out, runningTask{id: id, name: name, pid: int(task.Pid())})
		}
	}
	return out
}

// assertTaskPID: container name of p still runs, as the same process.
func assertTaskPID(t *testing.T, p *corev1.Pod, name string, pid int) {
	t.Helper()
	id := strings.TrimPrefix(containerStatus(p, name).ContainerID, "containerd://")
	for _, rt := range runningTasks(t, string(p.UID)) {
		if rt.id == id && rt.pid == pid && alive(pid) {
			return
		}
	}
	t.Fatalf("%s/%s: task %s pid %d no longer runs; running: %+v", p.Name, name, id, pid, runningTasks(t, string(p.UID)))
}

// dirNames lists the entries of dir (none if it does not exist).
func dirNames(dir string) []string {
	ents, _ := os.ReadDir(dir)
	out := make([]string, 0, len(ents))
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// waitFast polls cond every 200µs, for conditions that last only
// milliseconds.
func waitFast(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
		time.Sleep(200 * time.Microsecond)
	}
	return nil
}

func killPID(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// stop sends sig to podhost and fails the test unless it exits cleanly
// within limit; it returns how long that took.
func (d *podhostd) stop(sig syscall.Signal, limit time.Duration) time.Duration {
	d.t.Helper()
	start := time.Now()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatal(err)
	}
	select {
	case <-d.exited:
	case <-time.After(limit):
		d.kill(syscall.SIGKILL)
		d.t.Fatalf("podhost still running %v after %v:\n%s", limit, sig, d.logs())
	}
	took := time.Since(start)
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		d.t.Fatalf("podhost exited %d after %v:\n%s", code, sig, d.logs())
	}
	d.cmd = nil
	return took
}
