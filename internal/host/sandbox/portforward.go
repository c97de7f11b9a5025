package sandbox

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/containerd/containerd/v2/pkg/netns"
	cnins "github.com/containernetworking/plugins/pkg/ns"
)

// DialPort connects to TCP port on the loopback of the network namespace
// pinned at netnsPath ("" = the host's, for hostNetwork pods), as
// containerd's CRI port-forward does (sandbox_portforward_linux.go): in the
// namespace (NetNS.Do), 127.0.0.1 first, then ::1, one after the other —
// Happy Eyeballs would dial from goroutines outside the namespace. The
// connection's socket stays in the namespace.
func DialPort(ctx context.Context, netnsPath string, port int32) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("port %d: not a TCP port", port)
	}
	if netnsPath != "" {
		closed, err := netns.LoadNetNS(netnsPath).Closed()
		if err != nil {
			return nil, fmt.Errorf("network namespace %s: %w", netnsPath, err)
		}
		if closed {
			return nil, fmt.Errorf("network namespace %s is closed", netnsPath)
		}
	}
	var conn net.Conn
	dial := func(cnins.NetNS) error {
		var d net.Dialer
		p := strconv.Itoa(int(port))
		c, err4 := d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", p))
		if err4 != nil {
			var err6 error
			if c, err6 = d.DialContext(ctx, "tcp6", net.JoinHostPort("::1", p)); err6 != nil {
				return fmt.Errorf("failed to connect to localhost:%d: IPv4: %v, IPv6: %v", port, err4, err6)
			}
		}
		conn = c
		return nil
	}
	var err error
	if netnsPath == "" {
		err = dial(nil)
	} else {
		err = netns.LoadNetNS(netnsPath).Do(dial)
	}
	if err != nil {
		where := "the host's network namespace"
		if netnsPath != "" {
			where = "network namespace " + netnsPath
		}
		return nil, fmt.Errorf("port-forward in %s: %w", where, err)
	}
	return conn, nil
}
