package sandbox

import (
	"io"
	"net"
	"strings"
	"testing"
)

// TestDialPortHost: a hostNetwork pod's port is the host's loopback; a
// port nothing listens on is refused naming both families, as containerd
// words it; a port out of range is refused before any dial.
func TestDialPortHost(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.WriteString(c, "hi")
			c.Close()
		}
	}()
	c, err := DialPort(t.Context(), "", port)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	c.Close()
	if err != nil || string(got) != "hi" {
		t.Errorf("read %q, %v", got, err)
	}
	ln.Close() // the port is free now: refused
	if _, err := DialPort(t.Context(), "", port); err == nil || !strings.Contains(err.Error(), "IPv4:") || !strings.Contains(err.Error(), "IPv6:") {
		t.Errorf("closed port: %v", err)
	}
	for _, p := range []int32{0, -1, 65536} {
		if _, err := DialPort(t.Context(), "", p); err == nil {
			t.Errorf("port %d accepted", p)
		}
	}
}
