package network

import (
	"crypto/sha512"
	"errors"
	"fmt"

	goiptables "github.com/coreos/go-iptables/iptables"
	"github.com/mattn/go-shellwords"
)

// The bridge plugin (every version up to at least v1.9) only removes its
// ipMasq rules on DEL when it can enter the netns to learn the pod's
// addresses; with the netns gone (crash, reboot without an iptables reset)
// it skips them. cleanupMasq removes them by name instead: a nat chain
// CNI-<sha512(network+id)> (28 chars) and POSTROUTING rules jumping to it.
//
// Rules are deleted by their spec, never by their number: other processes
// (another CNI user, a second podhost, a firewall) change POSTROUTING at
// any time, and a number read a moment earlier may name another rule.

// masqChain is the plugins' utils.FormatChainName(network, id).
func masqChain(network, id string) string {
	return fmt.Sprintf("CNI-%x", sha512.Sum512([]byte(network+id)))[:28]
}

// cleanupMasq reports whether it found (and removed) a leaked chain.
func cleanupMasq(network, id string) (bool, error) {
	chain := masqChain(network, id)
	found := false
	var errs []error
	for _, proto := range []goiptables.Protocol{goiptables.ProtocolIPv4, goiptables.ProtocolIPv6} {
		ipt, err := goiptables.NewWithProtocol(proto)
		if err != nil {
			continue // no iptables/ip6tables binary
		}
		if ok, err := ipt.ChainExists("nat", chain); err != nil || !ok {
			continue // nothing leaked (or nat unusable: nothing to do)
		}
		found = true
		if err := cleanupChain(ipt, chain); err != nil {
			errs = append(errs, err)
		}
	}
	return found, errors.Join(errs...)
}

func cleanupChain(ipt *goiptables.IPTables, chain string) error {
	rules, err := ipt.List("nat", "POSTROUTING")
	if err != nil {
		return fmt.Errorf("list nat POSTROUTING: %w", err)
	}
	for _, r := range rules {
		spec, ok := jumpSpec(r, chain)
		if !ok {
			continue
		}
		if err := ipt.DeleteIfExists("nat", "POSTROUTING", spec...); err != nil {
			return fmt.Errorf("delete nat POSTROUTING rule %q: %w", r, err)
		}
	}
	if err := ipt.ClearAndDeleteChain("nat", chain); err != nil {
		return fmt.Errorf("delete nat chain %s: %w", chain, err)
	}
	return nil
}

// jumpSpec returns the rule spec of an `iptables -S` line ("-A POSTROUTING
// -s 10.0.0.2/32 -m comment --comment \"name: …\" -j CNI-…") when the rule
// jumps to chain.
func jumpSpec(line, chain string) ([]string, bool) {
	w, err := shellwords.Parse(line)
	if err != nil || len(w) < 4 || w[0] != "-A" || w[len(w)-2] != "-j" || w[len(w)-1] != chain {
		return nil, false
	}
	return w[2:], true
}
