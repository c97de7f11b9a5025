package cli

import "github.com/podhost/podhost/internal/host/network"

// Checks of the trust boundary (docs/security.md).

// checkLocalnetFirewall reports whether the rule that keeps pods away from
// the host's 127.0.0.0/8 (network.FirewallChain) is installed.
func checkLocalnetFirewall(installed func() (bool, error)) CheckResult {
	name := "localnet-fw"
	ok, err := installed()
	switch {
	case err != nil:
		return CheckResult{name, StatusWarn, "iptables: " + err.Error() + ": the daemon cannot install " + network.FirewallChain + "; pods with hostPorts will not start"}
	case !ok:
		return CheckResult{name, StatusWarn, network.FirewallChain + " is not installed (the daemon installs it at start): pods could reach the host's 127.0.0.1 once a hostPort opened the bridge to it"}
	}
	return CheckResult{name, StatusOK, network.FirewallChain + " drops packets from pods to the host's 127.0.0.0/8"}
}
