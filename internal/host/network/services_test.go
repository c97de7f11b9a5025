package network

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// SyncServices on the host's nat table, for a network of the test's own:
// the rules and jumps appear, a second sync replaces them (nothing
// doubled), no rules remove everything.
func TestSyncServices(t *testing.T) {
	requireIptables(t)
	m := &Manager{netName: fmt.Sprintf("podhost-unit-%d", os.Getpid())}
	dnat, masq := serviceChains(m.netName)
	t.Cleanup(func() { _ = m.RemoveServices() })
	subnet, cidr := netip.MustParsePrefix("10.250.0.0/24"), netip.MustParsePrefix("10.251.0.0/16")
	rule := ServiceRule{VIP: netip.MustParseAddr("10.251.0.7"), Port: 80, Protocol: "tcp", Comment: "default/web:80",
		Backends: []netip.AddrPort{netip.MustParseAddrPort("10.250.0.2:8080"), netip.MustParseAddrPort("10.250.0.3:8080")}}
	for range 2 {
		if err := m.SyncServices(subnet, cidr, []ServiceRule{rule}); err != nil {
			t.Fatal(err)
		}
	}
	save := natSave(t)
	for _, want := range []string{
		"-A PREROUTING -s 10.250.0.0/24 -m comment --comment \"podhost services: \\\"" + m.netName + "\\\"\" -j " + dnat,
		"-A " + dnat + " -d 10.251.0.7/32 -p tcp -m tcp --dport 80 -m comment --comment \"default/web:80\" -m statistic --mode random --probability 0.50000000000 -j DNAT --to-destination 10.250.0.2:8080",
		"-A " + dnat + " -d 10.251.0.7/32 -p tcp -m tcp --dport 80 -m comment --comment \"default/web:80\" -j DNAT --to-destination 10.250.0.3:8080",
		"-A " + masq + " -s 10.250.0.0/24 -m conntrack --ctstate DNAT --ctorigdst 10.251.0.0/16",
	} {
		if n := strings.Count(save, want); n != 1 {
			t.Errorf("%d times %q, want once:\n%s", n, want, save)
		}
	}
	if err := m.SyncServices(subnet, cidr, nil); err != nil {
		t.Fatal(err)
	}
	if save := natSave(t); strings.Contains(save, dnat) || strings.Contains(save, masq) {
		t.Errorf("left after removing every Service:\n%s", save)
	}
}

func natSave(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// requireIptables skips a test of the host's iptables without root or the
// iptables binary.
func requireIptables(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("no iptables")
	}
}
