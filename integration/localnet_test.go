//go:build integration

package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podhost/podhost/internal/testenv"
)

// TestPodCannotReachHostLoopback (CVE-2020-8558): portmap sets
// route_localnet=1 on the bridge so that a hostPort answers on the host's
// 127.0.0.1; without the kubelet's localnet firewall rule a pod could then
// send packets to the host's loopback services, by addressing a frame to
// the bridge's MAC with destination 127.0.0.1. From the pod's netns such a
// UDP datagram never reaches a listener on the host's 127.0.0.1, while the
// same kind of datagram to the bridge's own address does, and the hostPort
// still answers on 127.0.0.1.
func TestPodCannotReachHostLoopback(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	hostPort := testenv.FreePort(t)
	d.writeManifest("web.yaml", podManifest("web", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["httpd", "-f", "-p", "80", "-h", "/var/www"]
    ports: [{containerPort: 80, hostPort: %d}]
`, env.ImageRef, hostPort)))
	p := d.waitRunning("web")
	if b, err := os.ReadFile("/proc/sys/net/ipv4/conf/" + env.CNIBridge + "/route_localnet"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("route_localnet of %s: %q %v: portmap did not open the bridge to 127.0.0.0/8, the test proves nothing", env.CNIBridge, b, err)
	}
	var body string
	if err := waitFor(30*time.Second, func() (bool, error) {
		var err error
		body, err = httpGet(fmt.Sprintf("http://127.0.0.1:%d/", hostPort))
		return err == nil, nil
	}); err != nil || !strings.Contains(body, "hello from podhost") {
		t.Fatalf("hostPort %d on 127.0.0.1: %q %v", hostPort, body, err)
	}

	br, err := net.InterfaceByName(env.CNIBridge)
	if err != nil {
		t.Fatal(err)
	}
	gw := bridgeIPv4(t, br)
	victim := listenUDP(t, "127.0.0.1")
	control := listenUDP(t, gw.String())
	pid := taskPID(t, string(p.UID), "main")
	frame := podFrame{netns: fmt.Sprintf("/proc/%d/ns/net", pid), dstMAC: br.HardwareAddr, src: net.ParseIP(p.Status.PodIP)}

	if err := frame.send(net.IPv4(127, 0, 0, 1), udpPort(victim), []byte("to-loopback")); err != nil {
		t.Fatal(err)
	}
	// The control datagrams take the same path, sent after the one to
	// 127.0.0.1: once the second arrived, the first was long handled.
	for i := range 2 {
		msg := fmt.Sprintf("control-%d", i)
		if err := frame.send(gw, udpPort(control), []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if got := recvUDP(t, control, 30*time.Second); got != msg {
			t.Fatalf("the bridge address received %q, want %q", got, msg)
		}
	}
	if got, ok := pendingUDP(t, victim); ok {
		t.Fatalf("a pod sent %q to a listener on the host's 127.0.0.1", got)
	}
}

func bridgeIPv4(t *testing.T, br *net.Interface) net.IP {
	t.Helper()
	addrs, err := br.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.To4()
		}
	}
	t.Fatalf("bridge %s has no IPv4 address", br.Name)
	return nil
}

func listenUDP(t *testing.T, ip string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func udpPort(c *net.UDPConn) int { return c.LocalAddr().(*net.UDPAddr).Port }

func recvUDP(t *testing.T, c *net.UDPConn, timeout time.Duration) string {
	t.Helper()
	buf := make([]byte, 256)
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		t.Fatal(err)
	}
	n, _, err := c.ReadFromUDP(buf)
	if err != nil {
		t.Fatalf("receive on %s: %v", c.LocalAddr(), err)
	}
	return string(buf[:n])
}

// pendingUDP returns a datagram queued on c, if any, without waiting.
func pendingUDP(t *testing.T, c *net.UDPConn) (string, bool) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, rerr := -1, error(nil)
	if err := rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_DONTWAIT)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if errors.Is(rerr, unix.EAGAIN) {
		return "", false
	}
	if rerr != nil {
		t.Fatal(rerr)
	}
	return string(buf[:n]), true
}

// taskPID is the host PID of the running container name of pod uid.
func taskPID(t *testing.T, uid, name string) uint32 {
	t.Helper()
	ctx := env.Context(context.Background())
	for id, cname := range podContainers(t, uid) {
		if cname != name {
			continue
		}
		c, err := env.Client().LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		task, err := c.Task(ctx, nil)
		if err != nil {
			continue // an exited instance
		}
		return task.Pid()
	}
	t.Fatalf("no running container %s in pod %s", name, uid)
	return 0
}

// podFrame sends UDP datagrams from a pod's eth0 as raw frames to dstMAC,
// so that no route of the pod decides where they go.
type podFrame struct {
	netns  string
	dstMAC net.HardwareAddr
	src    net.IP
}

func (f podFrame) send(dst net.IP, port int, payload []byte) error {
	errc := make(chan error, 1)
	go func() {
		// The thread enters the pod's netns and is never unlocked: it
		// ends with the goroutine.
		runtime.LockOSThread()
		errc <- f.sendInNetNS(dst, port, payload)
	}()
	return <-errc
}

func (f podFrame) sendInNetNS(dst net.IP, port int, payload []byte) error {
	ns, err := unix.Open(f.netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(ns)
	if err := unix.Setns(ns, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", f.netns, err)
	}
	eth0, err := net.InterfaceByName("eth0")
	if err != nil {
		return err
	}
	proto := htons(unix.ETH_P_IP)
	s, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, int(proto))
	if err != nil {
		return err
	}
	defer unix.Close(s)
	to := &unix.SockaddrLinklayer{Protocol: proto, Ifindex: eth0.Index, Halen: 6}
	copy(to.Addr[:], f.dstMAC)
	return unix.Sendto(s, ipv4UDP(f.src, dst, 40000, port, payload), 0, to)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// ipv4UDP is an IPv4 packet holding a UDP datagram (no UDP checksum, which
// IPv4 allows).
func ipv4UDP(src, dst net.IP, sport, dport int, payload []byte) []byte {
	pkt := make([]byte, 20+8+len(payload))
	pkt[0], pkt[8], pkt[9] = 0x45, 64, unix.IPPROTO_UDP
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	copy(pkt[12:16], src.To4())
	copy(pkt[16:20], dst.To4())
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(pkt[i:]))
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	binary.BigEndian.PutUint16(pkt[10:], ^uint16(sum))
	udp := pkt[20:]
	binary.BigEndian.PutUint16(udp[0:], uint16(sport))
	binary.BigEndian.PutUint16(udp[2:], uint16(dport))
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	copy(udp[8:], payload)
	return pkt
}
