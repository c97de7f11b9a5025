package network

import (
	"bufio"
	"context"
	"crypto/sha512"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
)

// The bridge plugin (every version up to at least v1.9) only removes its
// ipMasq rules on DEL when it can enter the netns to learn the pod's
// addresses; with the netns gone (crash, reboot without an iptables reset)
// it skips them. cleanupMasq removes them by name instead: a nat chain
// CNI-<sha512(network+id)> (28 chars) and POSTROUTING rules jumping to it.

// masqChain is the plugins' utils.FormatChainName(network, id).
func masqChain(network, id string) string {
	return fmt.Sprintf("CNI-%x", sha512.Sum512([]byte(network+id)))[:28]
}

// cleanupMasq reports whether it found (and removed) a leaked chain.
func cleanupMasq(ctx context.Context, network, id string) (bool, error) {
	chain := masqChain(network, id)
	found := false
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		path, err := exec.LookPath(bin)
		if err != nil {
			continue
		}
		if _, err := iptables(ctx, path, "-S", chain); err != nil {
			continue // no such chain: nothing leaked
		}
		found = true
		if err := cleanupChain(ctx, path, chain); err != nil {
			errs = append(errs, err)
		}
	}
	return found, errors.Join(errs...)
}

func cleanupChain(ctx context.Context, bin, chain string) error {
	out, err := iptables(ctx, bin, "-L", "POSTROUTING", "-n", "--line-numbers")
	if err != nil {
		return err
	}
	for _, n := range rulesJumpingTo(out, chain) {
		if _, err := iptables(ctx, bin, "-D", "POSTROUTING", strconv.Itoa(n)); err != nil {
			return err
		}
	}
	if _, err := iptables(ctx, bin, "-F", chain); err != nil {
		return err
	}
	_, err = iptables(ctx, bin, "-X", chain)
	return err
}

// rulesJumpingTo parses `-L <chain> -n --line-numbers` output and returns
// the numbers of the rules whose target is chain, highest first (so that
// deleting them in order keeps the others' numbers valid).
func rulesJumpingTo(listing, chain string) []int {
	var nums []int
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[1] != chain {
			continue
		}
		if n, err := strconv.Atoi(f[0]); err == nil {
			nums = append(nums, n)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(nums)))
	return nums
}

func iptables(ctx context.Context, bin string, args ...string) (string, error) {
	full := append([]string{"-w", "-t", "nat"}, args...)
	out, err := exec.CommandContext(ctx, bin, full...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", bin, strings.Join(full, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
