//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestSeccompLocalhostProfile: a seccomp Localhost profile is read from
// <stateDir>/seccomp/<localhostProfile>. A missing profile fails the
// container's create (CreateContainerError, as the kubelet); a present one
// filters the container (mkdir denied by the profile, Seccomp: 2).
func TestSeccompLocalhostProfile(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	withProfile := func(name, profile string) string {
		return sleeper(name, 1, "    securityContext:\n      seccompProfile: {type: Localhost, localhostProfile: "+profile+"}\n")
	}
	d.writeManifest("missing.yaml", withProfile("missing", "profiles/missing.json"))
	p := d.waitPod("missing", 30*time.Second, "CreateContainerError", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerError"
	})
	if msg := containerStatus(p, "main").State.Waiting.Message; !strings.Contains(msg, "missing.json") {
		t.Errorf("waiting message %q does not name the profile", msg)
	}

	dir := filepath.Join(d.stateDir, "seccomp", "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	profile := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`
	if err := os.WriteFile(filepath.Join(dir, "nomkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	d.writeManifest("filtered.yaml", withProfile("filtered", "profiles/nomkdir.json"))
	d.waitRunning("filtered")
	out, _, code := d.execCLI("", "filtered", "--", "sh", "-c", "grep '^Seccomp:' /proc/self/status; mkdir /tmp/x && echo made")
	if code == 0 || !strings.Contains(out, "Seccomp:\t2") || strings.Contains(out, "made") {
		t.Fatalf("exec in filtered container: code %d, out %q; want seccomp mode 2 and mkdir denied", code, out)
	}
}

// procStatus returns the value of key in /proc/<pid>/status, read on the
// host.
func procStatus(t *testing.T, pid uint32, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return ""
}

// hasCap reports whether the CapEff mask of pid holds capability bit.
func hasCap(t *testing.T, pid uint32, bit uint) bool {
	t.Helper()
	mask, err := strconv.ParseUint(procStatus(t, pid, "CapEff"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return mask&(1<<bit) != 0
}

const capNetRaw = 13

// TestSeccompDefaultAndNetRaw, read from the host's /proc: a container
// that sets no seccomp profile runs under containerd's default profile
// (seccompDefault, on by default: Seccomp 2) without CAP_NET_RAW, its
// groups may use ICMP echo sockets (ping_group_range); capabilities.add
// [NET_RAW] gives the capability back; seccompProfile Unconfined opts out
// (Seccomp 0). With seccompDefault: false, a new container is unconfined.
func TestSeccompDefaultAndNetRaw(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	container := func(name, sc string) string {
		return fmt.Sprintf("  - name: %s\n    image: %s\n    command: [sleep, \"3600\"]\n%s", name, env.ImageRef, sc)
	}
	d.writeManifest("caps.yaml", podManifest("caps", "  terminationGracePeriodSeconds: 1\n  containers:\n"+
		container("main", "")+
		container("raw", "    securityContext: {capabilities: {add: [NET_RAW]}}\n")+
		container("unconfined", "    securityContext: {seccompProfile: {type: Unconfined}}\n")))
	p := d.waitRunning("caps")
	uid := string(p.UID)
	for _, c := range []struct {
		name    string
		seccomp string
		netRaw  bool
	}{{"main", "2", false}, {"raw", "2", true}, {"unconfined", "0", false}} {
		pid := taskPID(t, uid, c.name)
		if got := procStatus(t, pid, "Seccomp"); got != c.seccomp {
			t.Errorf("%s: Seccomp %s, want %s", c.name, got, c.seccomp)
		}
		if got := hasCap(t, pid, capNetRaw); got != c.netRaw {
			t.Errorf("%s: CAP_NET_RAW %v, want %v (CapEff %s)", c.name, got, c.netRaw, procStatus(t, pid, "CapEff"))
		}
	}
	// ICMP echo sockets (iputils' ping; busybox's needs a raw socket) are
	// open to every group, as containerd's CRI enable_unprivileged_icmp.
	if out, errOut, code := d.execCLI("", "caps", "-c", "main", "--", "cat", "/proc/sys/net/ipv4/ping_group_range"); code != 0 || strings.Join(strings.Fields(out), " ") != "0 2147483647" {
		t.Errorf("ping_group_range in the pod: exit %d: %q %s, want 0 2147483647", code, out, errOut)
	}

	d.kill(syscall.SIGTERM)
	cfg, err := os.ReadFile(d.configPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.configPath, append(cfg, "seccompDefault: false\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.writeManifest("legacy.yaml", sleeper("legacy", 1, ""))
	legacy := d.waitRunning("legacy")
	if got := procStatus(t, taskPID(t, string(legacy.UID), "main"), "Seccomp"); got != "0" {
		t.Errorf("seccompDefault: false: Seccomp %s, want 0", got)
	}
}
