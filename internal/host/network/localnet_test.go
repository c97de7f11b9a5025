package network

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Ensure on the host's iptables: twice gives one rule and one jump from
// INPUT and OUTPUT each (the chain is host-wide and stays, as the
// kubelet's KUBE-FIREWALL: any podhost on the machine relies on it).
func TestFirewallEnsureIdempotent(t *testing.T) {
	requireIptables(t)
	var f Firewall
	for range 2 {
		if err := f.Ensure(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("iptables", "-w", "-S").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{
		"-A INPUT -j " + FirewallChain,
		"-A OUTPUT -j " + FirewallChain,
		`-A PODHOST-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP`,
	} {
		if n := strings.Count(string(out), rule+"\n"); n != 1 {
			t.Errorf("%d times %q, want once:\n%s", n, rule, out)
		}
	}
	if ok, err := FirewallInstalled(); !ok || err != nil {
		t.Errorf("FirewallInstalled = %v, %v", ok, err)
	}
}

// EnsureEvery installs at most once a minute after a success, and again
// at once after a failure.
func TestFirewallEnsureEvery(t *testing.T) {
	now := time.Unix(1000, 0)
	calls := 0
	var fail error
	f := Firewall{now: func() time.Time { return now }, install: func(context.Context) error { calls++; return fail }}
	ctx := context.Background()
	step := func(d time.Duration, wantCalls int) {
		t.Helper()
		now = now.Add(d)
		_ = f.EnsureEvery(ctx)
		if calls != wantCalls {
			t.Fatalf("after %v: %d installs, want %d", d, calls, wantCalls)
		}
	}
	step(0, 1)
	step(30*time.Second, 1)
	step(31*time.Second, 2)
	fail = errors.New("iptables gone")
	step(time.Minute, 3)
	step(time.Second, 4)
}
