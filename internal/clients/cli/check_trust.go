package cli

import (
	"os"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/host/statedir"
)

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

// checkUserNS says whether pods with hostUsers: false can run here, as the
// daemon decides it at start (sandbox.CheckUserNS): user namespaces, and
// idmapped mounts on the pods dir's and run dir's filesystems and tmpfs.
func checkUserNS(cfg *config.Config, probe func(dirs ...string) (string, error)) CheckResult {
	name := "userns"
	if os.Geteuid() != 0 {
		return CheckResult{name, StatusWarn, "not checked: needs root (it makes a user namespace and idmapped mounts)"}
	}
	checked, err := probe(statedir.PodsDir(cfg.StateDir), cfg.RunDir)
	if err != nil {
		return CheckResult{name, StatusWarn, "pods with hostUsers: false will be refused: " + err.Error()}
	}
	return CheckResult{name, StatusOK, "hostUsers: false: user namespaces, idmapped mounts on " + checked}
}
