//go:build integration

package integration

// CNI failures, injected with the failpoint plugin (internal/testenv/failpoint)
// chained last after bridge/host-local and portmap: the real plugins have
// allocated a lease, a veth and NAT rules when the failpoint fails or hangs,
// so these tests see whether podhost's rollback and retry paths release
// them. Everything is checked on the host (lease files, mountinfo,
// iptables, containerd), plus the plugin's own call log.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/testenv/failpoint"
)

// TestFailpointAddFailsTwice: CNI ADD fails twice, then succeeds; the
// first failure's two rollback DELs fail too (so its sandbox is released
// by a later DEL, after its netns is gone). The pod ends Running; every
// failed attempt was rolled back, so exactly one lease, one netns and one
// set of NAT rules exist, all of the sandbox the container runs in;
// describe shows both FailedCreatePodSandBox events.
func TestFailpointAddFailsTwice(t *testing.T) {
	d := newPodhostd(t)
	fp := newFailpointNet(t)
	d.startWithNet(fp, true)
	baseSnaps := snapshotCount(t)
	fp.set(t, failpoint.Script{failpoint.CmdAdd: {Fail: 2}, failpoint.CmdDel: {Fail: 2}})
	d.writeManifest("flaky.yaml", sleeper("flaky", 1, ""))
	p := d.waitRunning("flaky")

	adds := fp.callsOf(t, failpoint.CmdAdd, "")
	if len(adds) != 3 || adds[0].Outcome != failpoint.OutcomeFail || adds[1].Outcome != failpoint.OutcomeFail || adds[2].Outcome != failpoint.OutcomeOK {
		t.Fatalf("ADD calls: %+v", adds)
	}
	good := adds[2]
	for _, bad := range adds[:2] {
		if bad.ContainerID == good.ContainerID {
			t.Fatalf("a retry reused sandbox %s", bad.ContainerID)
		}
		if dels := fp.callsOf(t, failpoint.CmdDel, bad.ContainerID); len(dels) == 0 || dels[len(dels)-1].Outcome != failpoint.OutcomeOK {
			t.Fatalf("failed sandbox %s was not CNI-DELed: %+v", bad.ContainerID, dels)
		}
	}
	if dels := fp.callsOf(t, failpoint.CmdDel, adds[0].ContainerID); len(dels) != 3 || dels[2].Netns != "" {
		t.Fatalf("first sandbox: want 2 failed DELs, then one without its (removed) netns: %+v", dels)
	}
	leases := leaseOwners(t)
	if len(leases) != 1 || leases[good.ContainerID] != p.Status.PodIP {
		t.Fatalf("leases %v, want only %s -> %s", leases, good.ContainerID, p.Status.PodIP)
	}
	netns := netnsPins(t, d)
	if len(netns) != 1 || netns[0] != good.Netns {
		t.Fatalf("netns mounts %v, want only %s", netns, good.Netns)
	}
	assertInNetns(t, containerPID(t, p, "main"), good.Netns)
	assertSandboxGone(t, d, adds[0], adds[1])
	if ids := keys(masqueradeOwners(t)); len(ids) != 1 || ids[0] != good.ContainerID {
		t.Fatalf("NAT rules of sandboxes %v, want only %s", ids, good.ContainerID)
	}
	desc := d.mustCLI("describe", "pod", "flaky")
	if n := strings.Count(desc, "FailedCreatePodSandBox"); n != 2 || !strings.Contains(desc, "injected ADD failure") {
		t.Fatalf("describe shows %d FailedCreatePodSandBox events, want 2:\n%s", n, desc)
	}

	d.removeManifest("flaky.yaml")
	waitNoContainers(t, d)
	assertNothingLeft(t, d, baseSnaps)
	assertNoMasquerade(t, nil)
}

// TestFailpointDelFailsOnDelete: CNI DEL fails three times when the pod is
// deleted. podhost keeps the sandbox (and so the lease) until a DEL
// succeeds, retrying with back-off; in the end nothing is left.
func TestFailpointDelFailsOnDelete(t *testing.T) {
	d := newPodhostd(t)
	fp := newFailpointNet(t)
	d.startWithNet(fp, true)
	baseSnaps := snapshotCount(t)
	d.writeManifest("sticky.yaml", sleeper("sticky", 1, ""))
	p := d.waitRunning("sticky")
	id := fp.callsOf(t, failpoint.CmdAdd, "")[0].ContainerID

	fp.set(t, failpoint.Script{failpoint.CmdDel: {Fail: 3}})
	d.removeManifest("sticky.yaml")
	fp.waitCall(t, 30*time.Second, failpoint.CmdDel, id, failpoint.OutcomeFail)
	if ip := leaseOwners(t)[id]; ip != p.Status.PodIP {
		t.Fatalf("lease of %s gone after a failed DEL (leases %v)", id, leaseOwners(t))
	}
	fp.waitCall(t, 60*time.Second, failpoint.CmdDel, id, failpoint.OutcomeOK)
	dels := fp.callsOf(t, failpoint.CmdDel, id)
	if len(dels) != 4 {
		t.Fatalf("DEL calls for %s: %+v, want 3 failures then success", id, dels)
	}
	t.Logf("DEL retried after %v, %v, %v", dels[1].Time.Sub(dels[0].Time).Round(time.Millisecond),
		dels[2].Time.Sub(dels[1].Time).Round(time.Millisecond), dels[3].Time.Sub(dels[2].Time).Round(time.Millisecond))
	// The failpoint's DEL runs first: bridge and host-local release after it.
	if err := waitFor(10*time.Second, func() (bool, error) { return len(leaseOwners(t)) == 0, nil }); err != nil {
		t.Fatalf("lease of %s not released after a successful DEL: %v", id, leaseOwners(t))
	}
	waitNoContainers(t, d)
	assertNothingLeft(t, d, baseSnaps)
	assertNoMasquerade(t, nil)
}

// TestFailpointKillDuringSandboxCreate: podhost SIGKILLed while CNI ADD of
// a new sandbox hangs (bridge and host-local have already run: a lease and
// a netns exist). On restart the stale Creating sandbox is rolled back —
// CNI DEL, lease released, namespaces unmounted — and the pod comes up in a
// new sandbox.
func TestFailpointKillDuringSandboxCreate(t *testing.T) {
	d := newPodhostd(t)
	fp := newFailpointNet(t)
	d.startWithNet(fp, true)
	fp.set(t, failpoint.Script{failpoint.CmdAdd: {Hang: "2m", HangTimes: 1}})
	d.writeManifest("slow.yaml", sleeper("slow", 1, ""))
	hung := fp.waitCall(t, 30*time.Second, failpoint.CmdAdd, "", failpoint.OutcomeHang)
	if _, ok := leaseOwners(t)[hung.ContainerID]; !ok {
		t.Fatalf("no lease for the hanging sandbox %s: %v", hung.ContainerID, leaseOwners(t))
	}
	if !contains(mountsUnder(t, runDirOf(d)), hung.Netns) {
		t.Fatalf("netns %s of the hanging sandbox not mounted", hung.Netns)
	}

	d.kill(syscall.SIGKILL)
	fp.waitCall(t, 10*time.Second, failpoint.CmdAdd, hung.ContainerID, failpoint.OutcomeAbandoned)
	if err := waitFor(5*time.Second, func() (bool, error) { return !alive(hung.PID), nil }); err != nil {
		t.Fatalf("plugin process %d outlived podhost", hung.PID)
	}
	d.startWithNet(fp, true)
	p := d.waitRunning("slow")

	if dels := fp.callsOf(t, failpoint.CmdDel, hung.ContainerID); len(dels) == 0 || dels[len(dels)-1].Outcome != failpoint.OutcomeOK {
		t.Fatalf("stale sandbox %s was not CNI-DELed: %+v", hung.ContainerID, dels)
	}
	leases := leaseOwners(t)
	if _, ok := leases[hung.ContainerID]; ok || len(leases) != 1 {
		t.Fatalf("leases %v: want exactly one, not %s's", leases, hung.ContainerID)
	}
	assertSandboxGone(t, d, hung)
	netns := netnsPins(t, d)
	if len(netns) != 1 {
		t.Fatalf("netns mounts %v, want exactly one", netns)
	}
	assertInNetns(t, containerPID(t, p, "main"), netns[0])
	assertNoMasquerade(t, []string{hung.ContainerID})
}

// TestFailpointDeleteWhileAddHangs: the pod is deleted while its CNI ADD
// hangs. The sync is cancelled (the plugin killed), the half-made sandbox
// rolled back, and nothing is left, long before the hang would have ended.
func TestFailpointDeleteWhileAddHangs(t *testing.T) {
	d := newPodhostd(t)
	fp := newFailpointNet(t)
	d.startWithNet(fp, true)
	baseSnaps := snapshotCount(t)
	fp.set(t, failpoint.Script{failpoint.CmdAdd: {Hang: "2m", HangTimes: 1}})
	d.writeManifest("doomed.yaml", sleeper("doomed", 1, ""))
	hung := fp.waitCall(t, 30*time.Second, failpoint.CmdAdd, "", failpoint.OutcomeHang)
	d.removeManifest("doomed.yaml")
	if err := waitFor(20*time.Second, func() (bool, error) {
		return !alive(hung.PID) && len(leaseOwners(t))+len(mountsUnder(t, runDirOf(d)))+len(podCgroups(d)) == 0, nil
	}); err != nil {
		t.Fatalf("not released: plugin alive %v, leases %v, mounts %v, cgroups %v",
			alive(hung.PID), leaseOwners(t), mountsUnder(t, runDirOf(d)), podCgroups(d))
	}
	assertSandboxGone(t, d, hung)
	assertNothingLeft(t, d, baseSnaps)
	assertNoMasquerade(t, nil)
}

// assertSandboxGone: nothing of the sandboxes of calls is mounted or on
// disk any more (pinned netns, ipc/uts pins, sandbox dir).
func assertSandboxGone(t *testing.T, d *podhostd, calls ...failpoint.Call) {
	t.Helper()
	mounts := mountsUnder(t, runDirOf(d))
	for _, c := range calls {
		dir := filepath.Join(runDirOf(d), "sandboxes", c.ContainerID)
		for _, m := range mounts {
			if m == c.Netns || strings.HasPrefix(m, dir+"/") {
				t.Fatalf("sandbox %s: %s still mounted", c.ContainerID, m)
			}
		}
		for _, p := range []string{dir, c.Netns} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("sandbox %s: %s still exists", c.ContainerID, p)
			}
		}
	}
}

// assertInNetns: process pid runs in the network namespace pinned at path.
func assertInNetns(t *testing.T, pid int, path string) {
	t.Helper()
	var a, b syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"), &a); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(path, &b); err != nil {
		t.Fatal(err)
	}
	if a.Dev != b.Dev || a.Ino != b.Ino {
		t.Fatalf("pid %d is not in the netns pinned at %s", pid, path)
	}
}

func waitNoContainers(t *testing.T, d *podhostd) {
	t.Helper()
	if err := waitFor(60*time.Second, func() (bool, error) { n, err := countContainers(); return n == 0, err }); err != nil {
		t.Fatalf("containers left: %v\n%s", err, d.logs())
	}
}

// ---- host-side views ----

func runDirOf(d *podhostd) string { return filepath.Join(env.RunDir, filepath.Base(d.dir)) }

// mountsUnder lists mount points below dir, from /proc/self/mountinfo.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// netnsPins lists the pinned network namespaces (nsfs mounts of net:[…])
// below podhost's run dir, from /proc/self/mountinfo.
func netnsPins(t *testing.T, d *podhostd) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[3], "net:[") && strings.HasPrefix(f[4], runDirOf(d)+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// leaseOwners maps the container (sandbox) ID of every host-local lease of
// the suite's network to its IP.
func leaseOwners(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range leaseFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // released meanwhile
		}
		id := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		out[id] = filepath.Base(f)
	}
	return out
}

var masqComment = regexp.MustCompile(`name: \\"([^\\]+)\\" id: \\"([^\\]+)\\"`)

// masqueradeOwners returns the sandbox IDs that still have iptables NAT
// rules (bridge ipMasq, portmap) of the suite's network.
func masqueradeOwners(t *testing.T) map[string]bool {
	t.Helper()
	out, err := execOutput("iptables-save", "-t", "nat")
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	ids := map[string]bool{}
	for _, m := range masqComment.FindAllStringSubmatch(out, -1) {
		if m[1] == env.CNINetwork {
			ids[m[2]] = true
		}
	}
	return ids
}

// assertNoMasquerade waits until no NAT rules remain for any of ids (for
// any sandbox at all when ids is nil), and fails if some do.
func assertNoMasquerade(t *testing.T, ids []string) {
	t.Helper()
	var left []string
	err := waitFor(10*time.Second, func() (bool, error) {
		left = left[:0]
		for id := range masqueradeOwners(t) {
			if ids == nil || contains(ids, id) {
				left = append(left, id)
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		t.Fatalf("iptables NAT rules left for sandboxes %v", left)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func assertSameStrings(t *testing.T, what string, want, got []string) {
	t.Helper()
	if fmt.Sprint(sorted(want)) != fmt.Sprint(sorted(got)) {
		t.Fatalf("%s changed: was %v, now %v", what, sorted(want), sorted(got))
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}

// ---- the failpoint network ----

// fpNet is the suite's CNI network (same name, bridge, subnet and lease
// dir, so leaseFiles and the harness cleanup see it) with the failpoint
// plugin chained last, in a conf dir of its own.
type fpNet struct {
	ctl     failpoint.Control
	confDir string
	binDirs []string
}

var fpPlugin struct {
	once sync.Once
	dir  string
	err  error
}

// newFailpointNet builds the plugin (once per test binary) and writes the
// network config. Call it after newPodhostd: its cleanup clears the script
// before the daemon's teardown deletes the pods.
func newFailpointNet(t *testing.T) *fpNet {
	t.Helper()
	fpPlugin.once.Do(func() {
		fpPlugin.dir = filepath.Join(env.Dir, "failpoint-bin")
		if fpPlugin.err = os.MkdirAll(fpPlugin.dir, 0o755); fpPlugin.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			_, fpPlugin.err = failpoint.Build(ctx, env.RepoRoot, fpPlugin.dir)
		}
	})
	if fpPlugin.err != nil {
		t.Fatal(fpPlugin.err)
	}
	dir, err := os.MkdirTemp(env.Dir, "fp-")
	if err != nil {
		t.Fatal(err)
	}
	n := &fpNet{ctl: failpoint.Control{Path: filepath.Join(dir, "control.json")}, confDir: filepath.Join(dir, "net.d"),
		binDirs: append([]string{fpPlugin.dir}, env.CNIBinDirs...)}
	n.writeConf(t)
	t.Cleanup(func() {
		if err := n.ctl.Set(nil); err != nil {
			t.Errorf("clear failpoint script: %v", err)
		}
	})
	return n
}

func (n *fpNet) writeConf(t *testing.T) {
	t.Helper()
	name := "10-podhost-it.conflist"
	b, err := os.ReadFile(filepath.Join(env.CNIConfDir, name))
	if err == nil {
		b, err = failpoint.Chain(b, n.ctl.Path)
	}
	if err == nil {
		err = os.MkdirAll(n.confDir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(n.confDir, name), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (n *fpNet) set(t *testing.T, s failpoint.Script) {
	t.Helper()
	if err := n.ctl.Set(s); err != nil {
		t.Fatal(err)
	}
}

// callsOf returns the logged calls of cmd (of sandbox id, unless "").
func (n *fpNet) callsOf(t *testing.T, cmd, id string) []failpoint.Call {
	t.Helper()
	all, err := n.ctl.Calls()
	if err != nil {
		t.Fatal(err)
	}
	return failpoint.Select(all, cmd, id)
}

// waitCall waits for a call of cmd (of sandbox id, unless "") with outcome.
func (n *fpNet) waitCall(t *testing.T, timeout time.Duration, cmd, id, outcome string) failpoint.Call {
	t.Helper()
	var got failpoint.Call
	err := waitFor(timeout, func() (bool, error) {
		for _, c := range n.callsOf(t, cmd, id) {
			if c.Outcome == outcome {
				got = c
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		all, _ := n.ctl.Calls()
		t.Fatalf("no %s %s call with outcome %s within %v; calls: %+v", cmd, id, outcome, timeout, all)
	}
	return got
}

// startWithNet runs d with fp's CNI config and plugin dir instead of the
// suite's; wait: until ready.
func (d *podhostd) startWithNet(fp *fpNet, wait bool) {
	d.t.Helper()
	args := d.args()
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--cni-conf-dir":
			args[i+1] = fp.confDir
		case "--cni-bin-dir":
			args[i+1] = strings.Join(fp.binDirs, ",")
		}
	}
	d.startArgs(args)
	if wait {
		d.waitReady(60 * time.Second)
	}
}
