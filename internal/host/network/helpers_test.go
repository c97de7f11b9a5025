package network

import (
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

const ipForward = "/proc/sys/net/ipv4/ip_forward"

// portmapChains are the shared chains portmap creates on first use and
// never deletes.
var portmapChains = []string{"CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-SNAT", "CNI-HOSTPORT-MASQ", "CNI-HOSTPORT-SETMARK"}

// snapshotHost records host state the plugins change and returns a func
// restoring it: net.ipv4.ip_forward (the bridge plugin turns it on) and
// portmap's shared nat chains (removed only if this test made them and no
// one else uses them).
func snapshotHost(t *testing.T) func() {
	fwd, _ := os.ReadFile(ipForward)
	before, _ := exec.Command("iptables-save", "-t", "nat").Output()
	return func() {
		if len(fwd) > 0 {
			_ = os.WriteFile(ipForward, fwd, 0o644)
		}
		for _, c := range portmapChains {
			if strings.Contains(string(before), ":"+c+" ") {
				continue
			}
			removeSharedChain(t, c)
		}
	}
}

// removeSharedChain deletes a chain that holds no per-sandbox rules, and
// the jumps to it from the built-in nat chains.
func removeSharedChain(t *testing.T, chain string) {
	out, err := exec.Command("iptables", "-w", "-t", "nat", "-S", chain).Output()
	if err != nil {
		return
	}
	if strings.Contains(string(out), "CNI-DN-") {
		t.Logf("chain %s in use, left alone", chain)
		return
	}
	for _, builtin := range []string{"PREROUTING", "OUTPUT", "POSTROUTING"} {
		list, err := exec.Command("iptables", "-w", "-t", "nat", "-S", builtin).Output()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(list), "\n") {
			spec, ok := jumpSpec(line, chain)
			if !ok {
				continue
			}
			args := append([]string{"-w", "-t", "nat", "-D", builtin}, spec...)
			if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil {
				t.Logf("delete jump %s %q: %v: %s", builtin, line, err, out)
			}
		}
	}
	_ = exec.Command("iptables", "-w", "-t", "nat", "-F", chain).Run()
	if out, err := exec.Command("iptables", "-w", "-t", "nat", "-X", chain).CombinedOutput(); err != nil {
		t.Logf("delete chain %s: %v: %s", chain, err, out)
	}
}
