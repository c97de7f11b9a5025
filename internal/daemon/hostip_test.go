package daemon

import (
	"errors"
	"net"
	"testing"
)

func TestChooseHostIP(t *testing.T) {
	ips := func(s ...string) []net.IP {
		var out []net.IP
		for _, a := range s {
			out = append(out, net.ParseIP(a))
		}
		return out
	}
	local := ips("127.0.0.1", "::1", "fe80::1", "192.0.2.10", "2001:db8::10", "10.89.0.1")
	noRoute := errors.New("no default routes found")
	for _, tc := range []struct {
		name     string
		hostname string
		lookup   []net.IP
		local    []net.IP
		bind     net.IP
		bindErr  error
		want     string
	}{
		{"node name is an IP", "192.0.2.99", nil, local, nil, noRoute, "192.0.2.99"},
		{"looked-up loopback skipped (Debian's 127.0.1.1)", "box", ips("127.0.1.1"), local, net.ParseIP("10.89.0.1"), nil, "10.89.0.1"},
		{"looked-up address on an interface, IPv4 first", "box", ips("2001:db8::10", "192.0.2.10"), local, net.ParseIP("10.89.0.1"), nil, "192.0.2.10"},
		{"looked-up IPv6 when no IPv4", "box", ips("2001:db8::10"), local, net.ParseIP("10.89.0.1"), nil, "2001:db8::10"},
		{"looked-up address not local", "box", ips("198.51.100.1"), local, net.ParseIP("192.0.2.10"), nil, "192.0.2.10"},
		{"looked-up link-local skipped", "box", ips("fe80::1"), local, net.ParseIP("2001:db8::10"), nil, "2001:db8::10"},
		{"no default route: a global address", "box", nil, local, nil, noRoute, "192.0.2.10"},
		{"no default route, IPv6 only", "box", nil, ips("127.0.0.1", "fe80::1", "2001:db8::10"), nil, noRoute, "2001:db8::10"},
		{"loopback only", "box", nil, ips("127.0.0.1", "::1"), nil, noRoute, "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := chooseHostIP(hostIPSources{
				hostname: tc.hostname,
				lookup:   func(string) ([]net.IP, error) { return tc.lookup, nil },
				localIPs: func() ([]net.IP, error) { return tc.local, nil },
				bind:     func() (net.IP, error) { return tc.bind, tc.bindErr },
			})
			if got != tc.want {
				t.Errorf("hostIP = %s, want %s", got, tc.want)
			}
		})
	}
}
