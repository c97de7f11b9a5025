package network

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	goiptables "github.com/coreos/go-iptables/iptables"
)

// ServiceRule is one port of a Service's virtual IP, DNAT-balanced over
// its ready pods (kube-proxy's iptables mode: the statistic module picks
// one backend per new connection, with equal odds).
type ServiceRule struct {
	VIP      netip.Addr
	Port     uint16
	Protocol string           // tcp, udp or sctp
	Backends []netip.AddrPort // pod IP and target port
	Comment  string           // "ns/name:port"
}

// serviceChains are the nat chains of the network's Services: DNAT of
// the pods' connections to virtual IPs (jumped to from PREROUTING for the
// pod subnet) and the masquerade of those that reach a pod of the same
// bridge (jumped to first from POSTROUTING: the reply must come back
// through the host to be un-DNATed). Named per network, so that two
// podhosts on one machine never touch each other's.
func serviceChains(network string) (dnat, masq string) {
	h := fmt.Sprintf("%x", sha256.Sum256([]byte(network)))[:12]
	return "PODHOST-SVC-" + h, "PODHOST-SVCM-" + h
}

// SyncServices makes the nat table hold exactly rules for the pod network
// (subnet): the chains are rewritten from rules at each call, so what a
// crash or an earlier version left is replaced, and with no rules the
// chains and their jumps are removed (nothing stays on the host). The
// daemon calls it with the full set at start and after each change.
func (m *Manager) SyncServices(subnet netip.Prefix, serviceCIDR netip.Prefix, rules []ServiceRule) error {
	ipt, err := goiptables.NewWithProtocol(goiptables.ProtocolIPv4)
	if err != nil {
		return fmt.Errorf("services: iptables: %w", err)
	}
	dnat, masq := serviceChains(m.netName)
	comment := []string{"-m", "comment", "--comment", "podhost services: " + strconv.Quote(m.netName)}
	preJump := append([]string{"-s", subnet.String()}, append(comment, "-j", dnat)...)
	postJump := append(append([]string(nil), comment...), "-j", masq)
	if len(rules) == 0 {
		return errors.Join(deleteJumps(ipt, "PREROUTING", dnat), deleteJumps(ipt, "POSTROUTING", masq),
			deleteChain(ipt, dnat), deleteChain(ipt, masq))
	}
	for _, c := range []string{dnat, masq} {
		if err := ipt.ClearChain("nat", c); err != nil { // creates it if missing
			return fmt.Errorf("services: nat chain %s: %w", c, err)
		}
	}
	masqRule := append([]string{"-s", subnet.String(), "-m", "conntrack", "--ctstate", "DNAT", "--ctorigdst", serviceCIDR.String()},
		append(comment, "-j", "MASQUERADE")...)
	if err := ipt.Append("nat", masq, masqRule...); err != nil {
		return fmt.Errorf("services: nat chain %s: %w", masq, err)
	}
	for _, r := range rules {
		for _, spec := range dnatSpecs(r) {
			if err := ipt.Append("nat", dnat, spec...); err != nil {
				return fmt.Errorf("services: %s: %w", r.Comment, err)
			}
		}
	}
	for _, j := range []struct {
		chain string
		spec  []string
	}{{"PREROUTING", preJump}, {"POSTROUTING", postJump}} {
		if ok, err := ipt.Exists("nat", j.chain, j.spec...); err != nil || !ok {
			if err := ipt.Insert("nat", j.chain, 1, j.spec...); err != nil {
				return fmt.Errorf("services: nat %s jump: %w", j.chain, err)
			}
		}
	}
	return nil
}

// dnatSpecs are one rule per backend: the i-th of n taken with odds
// 1/(n-i), the last always (kube-proxy's), each a DNAT to its pod.
func dnatSpecs(r ServiceRule) [][]string {
	var out [][]string
	for i, b := range r.Backends {
		spec := []string{"-d", r.VIP.String() + "/32", "-p", r.Protocol, "-m", r.Protocol, "--dport", strconv.Itoa(int(r.Port)),
			"-m", "comment", "--comment", r.Comment}
		if n := len(r.Backends) - i; n > 1 {
			spec = append(spec, "-m", "statistic", "--mode", "random", "--probability", strconv.FormatFloat(1/float64(n), 'f', 10, 64))
		}
		out = append(out, append(spec, "-j", "DNAT", "--to-destination", b.String()))
	}
	return out
}

// RemoveServices removes what SyncServices installed (the daemon, when it
// runs without virtual IPs).
func (m *Manager) RemoveServices() error {
	return m.SyncServices(netip.Prefix{}, netip.Prefix{}, nil)
}

// deleteJumps deletes the rules of chain that jump to target, by their
// spec (whatever subnet an earlier run used).
func deleteJumps(ipt *goiptables.IPTables, chain, target string) error {
	rules, err := ipt.List("nat", chain)
	if err != nil {
		return fmt.Errorf("services: list nat %s: %w", chain, err)
	}
	for _, r := range rules {
		if spec, ok := jumpSpec(r, target); ok {
			if err := ipt.DeleteIfExists("nat", chain, spec...); err != nil {
				return fmt.Errorf("services: delete nat %s rule %q: %w", chain, r, err)
			}
		}
	}
	return nil
}

func deleteChain(ipt *goiptables.IPTables, chain string) error {
	if ok, err := ipt.ChainExists("nat", chain); err != nil || !ok {
		return err
	}
	return ipt.ClearAndDeleteChain("nat", chain)
}
