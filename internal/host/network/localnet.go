package network

import (
	"context"
	"fmt"
	"sync"
	"time"

	goiptables "github.com/coreos/go-iptables/iptables"
)

// The portmap plugin (snat: true, so that a hostPort answers on the host's
// 127.0.0.1) sets net.ipv4.conf.<bridge>.route_localnet=1. That also lets a
// pod send packets to the host's 127.0.0.1: a frame to the bridge's MAC
// with destination 127.0.0.1 is delivered to the host's loopback services
// (CVE-2020-8558). The kubelet drops such packets in its KUBE-FIREWALL
// chain (pkg/kubelet/kubelet_network_linux.go); podhost installs the same
// rule in a chain of its own, with the iptables binary the CNI plugins use
// (so with their backend, nf_tables or legacy). IPv6 has no such issue.

// FirewallChain is podhost's filter chain; INPUT and OUTPUT jump to it
// first.
const FirewallChain = "PODHOST-FIREWALL"

// localnetRule is the kubelet's "block incoming localnet connections" rule:
// packets to 127.0.0.0/8 not from it, unless a DNAT (a hostPort reached on
// 127.0.0.1) or a reply.
var localnetRule = []string{
	"-m", "comment", "--comment", "block incoming localnet connections",
	"--dst", "127.0.0.0/8",
	"!", "--src", "127.0.0.0/8",
	"-m", "conntrack",
	"!", "--ctstate", "RELATED,ESTABLISHED,DNAT",
	"-j", "DROP",
}

var jumpRule = []string{"-j", FirewallChain}

// firewallRecheck is how often Setup checks the rules again (someone may
// have flushed the host's iptables since): the kubelet checks its canary
// chain every minute.
const firewallRecheck = time.Minute

// Firewall keeps the localnet rule installed.
type Firewall struct {
	mu      sync.Mutex
	checked time.Time // of the last successful Ensure
	now     func() time.Time
	install func(context.Context) error // nil: ensureFirewall (tests replace it)
}

// Ensure installs the chain, its rule and the INPUT and OUTPUT jumps, each
// only if missing (the rule is the chain's only one: anything else in it is
// left alone). Safe to call often and from several podhost instances.
func (f *Firewall) Ensure(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	install := f.install
	if install == nil {
		install = ensureFirewall
	}
	if err := install(ctx); err != nil {
		return err
	}
	f.checked = f.clock()
	return nil
}

// EnsureEvery is Ensure unless the last success is less than
// firewallRecheck ago.
func (f *Firewall) EnsureEvery(ctx context.Context) error {
	f.mu.Lock()
	fresh := !f.checked.IsZero() && f.clock().Sub(f.checked) < firewallRecheck
	f.mu.Unlock()
	if fresh {
		return nil
	}
	return f.Ensure(ctx)
}

func (f *Firewall) clock() time.Time {
	if f.now != nil {
		return f.now()
	}
	return time.Now()
}

func ensureFirewall(ctx context.Context) error {
	ipt, err := goiptables.NewWithProtocol(goiptables.ProtocolIPv4)
	if err != nil {
		return fmt.Errorf("localnet firewall: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	exists, err := ipt.ChainExists("filter", FirewallChain)
	if err != nil {
		return fmt.Errorf("localnet firewall: %w", err)
	}
	if !exists {
		if err := ipt.NewChain("filter", FirewallChain); err != nil {
			// Another podhost may have made it meanwhile.
			if again, _ := ipt.ChainExists("filter", FirewallChain); !again {
				return fmt.Errorf("localnet firewall: create chain %s: %w", FirewallChain, err)
			}
		}
	}
	if err := ipt.AppendUnique("filter", FirewallChain, localnetRule...); err != nil {
		return fmt.Errorf("localnet firewall: %w", err)
	}
	for _, from := range []string{"INPUT", "OUTPUT"} {
		if err := ipt.InsertUnique("filter", from, 1, jumpRule...); err != nil {
			return fmt.Errorf("localnet firewall: %s jump: %w", from, err)
		}
	}
	return nil
}

// FirewallInstalled reports whether the rule and both jumps are in place
// (podhost check).
func FirewallInstalled() (bool, error) {
	ipt, err := goiptables.NewWithProtocol(goiptables.ProtocolIPv4)
	if err != nil {
		return false, err
	}
	if ok, err := ipt.ChainExists("filter", FirewallChain); err != nil || !ok {
		return false, err
	}
	if ok, err := ipt.Exists("filter", FirewallChain, localnetRule...); err != nil || !ok {
		return false, err
	}
	for _, from := range []string{"INPUT", "OUTPUT"} {
		if ok, err := ipt.Exists("filter", from, jumpRule...); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}
