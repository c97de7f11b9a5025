package network

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/netns"
	cnins "github.com/containernetworking/plugins/pkg/ns"
)

type testEnv struct {
	m               *Manager
	bridge, dataDir string
	subnet          *net.IPNet
	gateway         net.IP
}

// pluginDir finds a dir with the CNI plugins the default conflist uses.
func pluginDir(t *testing.T) string {
	t.Helper()
	for _, d := range DefaultBinDirs {
		ok := true
		for _, p := range []string{"bridge", "host-local", "portmap", "loopback"} {
			if _, err := os.Stat(filepath.Join(d, p)); err != nil {
				ok = false
			}
		}
		if ok {
			return d
		}
	}
	t.Skip("CNI plugins not installed (apt-get install containernetworking-plugins)")
	return ""
}

// newTestEnv builds a Manager on a private bridge and subnet with temp conf,
// cache and lease dirs, and cleans up host state (bridge, sysctl, iptables)
// afterwards.
func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bin := pluginDir(t)
	pid := os.Getpid()
	e := &testEnv{bridge: fmt.Sprintf("phtest%d", pid), dataDir: t.TempDir()}
	_, e.subnet, _ = net.ParseCIDR(fmt.Sprintf("10.234.%d.0/24", pid%250))
	e.gateway = net.IPv4(10, 234, byte(pid%250), 1)
	restore := snapshotHost(t)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", e.bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
			t.Errorf("delete bridge: %v: %s", err, out)
		}
		restore()
	})
	m, err := New(Config{
		ConfDir: t.TempDir(), BinDirs: []string{bin}, CacheDir: t.TempDir(), IPAMDataDir: e.dataDir,
		Bridge: e.bridge, Subnet: e.subnet.String(), Logger: testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	return e
}

func newNS(t *testing.T) *netns.NetNS {
	t.Helper()
	ns, err := netns.NewNetNS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Remove() })
	return ns
}

// echoIn starts a TCP echo server on port inside ns; the socket is made in
// the namespace (by a thread that switched there), serving happens anywhere.
func echoIn(t *testing.T, ns *netns.NetNS, port int) {
	t.Helper()
	var ln net.Listener
	err := ns.Do(func(cnins.NetNS) error {
		var err error
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
}

func assertEcho(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp4", addr, 3*time.Second)
	if err != nil {
		t.Errorf("dial %s: %v", addr, err)
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Errorf("write %s: %v", addr, err)
		return
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping\n" {
		t.Errorf("echo via %s: %q, %v", addr, buf, err)
	}
}

func freePort(t *testing.T) int32 {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

func leaseFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, DefaultNetworkName))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			out = append(out, e.Name())
		}
	}
	return out
}

func natHas(t *testing.T, needle string) bool {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables-save: %v: %s", err, out)
	}
	return strings.Contains(string(out), needle)
}

func TestSetupTeardown(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	ns := newNS(t)
	id := fmt.Sprintf("test-%d-a", os.Getpid())
	hostPort := freePort(t)
	ports := []PortMapping{{HostPort: hostPort, ContainerPort: 8080, Protocol: "tcp"}}
	res, err := e.m.Setup(ctx, id, ns.GetPath(), ports)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.IPs) != 1 || !e.subnet.Contains(net.ParseIP(res.IPs[0])) {
		t.Fatalf("IPs = %v, want one in %s", res.IPs, e.subnet)
	}
	var raw []map[string]any
	if err := json.Unmarshal(res.Raw, &raw); err != nil || len(raw) != 2 {
		t.Errorf("Raw = %s (%v)", res.Raw, err)
	}
	if got := leaseFiles(t, e.dataDir); len(got) != 1 || got[0] != res.IPs[0] {
		t.Errorf("leases = %v", got)
	}
	echoIn(t, ns, 8080)
	assertEcho(t, net.JoinHostPort(res.IPs[0], "8080"))                       // host → pod
	assertEcho(t, fmt.Sprintf("127.0.0.1:%d", hostPort))                      // hostPort on localhost
	assertEcho(t, net.JoinHostPort(e.gateway.String(), fmt.Sprint(hostPort))) // hostPort on a host address
	// Without ports: portmap <= v1.1.x's CHECK wrongly looks for its chain
	// in ip6tables too, so it fails for any hostPort on such hosts.
	if err := e.m.Check(ctx, id, ns.GetPath(), nil); err != nil {
		t.Errorf("Check: %v", err)
	}

	for i := 0; i < 2; i++ {
		if err := e.m.Teardown(ctx, id, ns.GetPath(), ports); err != nil {
			t.Fatalf("Teardown #%d: %v", i+1, err)
		}
	}
	if got := leaseFiles(t, e.dataDir); len(got) != 0 {
		t.Errorf("leases after teardown = %v", got)
	}
	if natHas(t, masqChain(DefaultNetworkName, id)) || natHas(t, id) {
		t.Error("nat rules of the sandbox remain after teardown")
	}
}

// TestTeardownWithoutNetns: the namespace is gone first (crash, reboot);
// DEL without a netns still releases the lease and the iptables rules.
func TestTeardownWithoutNetns(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	ns := newNS(t)
	id := fmt.Sprintf("test-%d-b", os.Getpid())
	ports := []PortMapping{{HostPort: freePort(t), ContainerPort: 80, Protocol: "tcp"}}
	if _, err := e.m.Setup(ctx, id, ns.GetPath(), ports); err != nil {
		t.Fatal(err)
	}
	path := ns.GetPath()
	if err := ns.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Teardown(ctx, id, path, ports); err != nil { // path no longer exists
		t.Fatal(err)
	}
	if err := e.m.Teardown(ctx, id, "", ports); err != nil {
		t.Fatal(err)
	}
	if got := leaseFiles(t, e.dataDir); len(got) != 0 {
		t.Errorf("leases after teardown = %v", got)
	}
	if natHas(t, masqChain(DefaultNetworkName, id)) || natHas(t, id) {
		t.Error("nat rules of the sandbox remain after teardown without netns")
	}
}

// TestSetupRollback: portmap fails after the bridge allocated an address;
// Setup must undo the allocation.
func TestSetupRollback(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	ns := newNS(t)
	id := fmt.Sprintf("test-%d-c", os.Getpid())
	bad := []PortMapping{{HostPort: freePort(t), ContainerPort: 80, Protocol: "bogus"}}
	if _, err := e.m.Setup(ctx, id, ns.GetPath(), bad); err == nil {
		t.Fatal("Setup with a bad protocol must fail")
	}
	if got := leaseFiles(t, e.dataDir); len(got) != 0 {
		t.Errorf("leases after failed setup = %v", got)
	}
	var ifaces []string
	_ = ns.Do(func(cnins.NetNS) error {
		l, _ := net.Interfaces()
		for _, i := range l {
			ifaces = append(ifaces, i.Name)
		}
		return nil
	})
	if strings.Contains(strings.Join(ifaces, ","), podIfName) {
		t.Errorf("interfaces after failed setup = %v", ifaces)
	}
	if natHas(t, masqChain(DefaultNetworkName, id)) || natHas(t, id) {
		t.Error("nat rules remain after failed setup")
	}
}
