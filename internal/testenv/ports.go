//go:build integration

package testenv

import (
	"fmt"
	"net"
	"testing"
)

// FreePort returns a port number that is free on every address of this
// machine for both TCP and UDP right now, as the kernel picks it (from the
// ephemeral range: never a port a user chose for a service, such as the
// hostPort 18080 of `make run`'s example pod). Tests use it for host ports
// instead of a fixed number, so they never collide with a dev podhost or
// with another test run.
func FreePort(tb testing.TB) int {
	tb.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", ":0")
		if err != nil {
			tb.Fatalf("testenv: free port: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", fmt.Sprintf(":%d", port))
		ln.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
	tb.Fatal("testenv: no port free for both TCP and UDP in 20 tries")
	return 0
}
