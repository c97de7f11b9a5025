package network

import "testing"

func TestBridgeGateway(t *testing.T) {
	for _, tc := range []struct{ src, gw, subnet string }{
		{`{"type":"bridge","isGateway":true,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.89.0.0/16"}]]}}`, "10.89.0.1", "10.89.0.0/16"},
		{`{"type":"bridge","isGateway":true,"ipam":{"ranges":[[{"subnet":"fd00::/64"}],[{"subnet":"10.90.3.0/24","gateway":"10.90.3.254"}]]}}`, "10.90.3.254", "10.90.3.0/24"},
		{`{"type":"bridge","isGateway":true,"ipam":{"subnet":"10.7.0.0/24"}}`, "10.7.0.1", "10.7.0.0/24"},
		{`{"type":"bridge","ipam":{"subnet":"10.7.0.0/24"}}`, "", ""},
		{`{"type":"macvlan","isGateway":true,"ipam":{"subnet":"10.7.0.0/24"}}`, "", ""},
		{`{"type":"bridge","isGateway":true,"ipam":{"subnet":"10.7.0.0/24","gateway":"10.8.0.1"}}`, "", ""},
	} {
		gw, subnet, ok := bridgeGateway([]byte(tc.src))
		if (tc.gw == "") == ok || ok && (gw.String() != tc.gw || subnet.String() != tc.subnet) {
			t.Errorf("%s: got %v %v %v, want %q %q", tc.src, gw, subnet, ok, tc.gw, tc.subnet)
		}
	}
}
