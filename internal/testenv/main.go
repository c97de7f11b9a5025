//go:build integration

package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// Main is the body of an integration package's TestMain:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }
//
// It runs Setup (failing the whole binary if that fails), stores the Env in
// *out, runs the tests and closes the Env: after the tests, on SIGINT,
// SIGTERM or SIGHUP, on a panic in TestMain's goroutine, and 30s before the
// go test -timeout would kill the binary. On a failed run it prints the tail
// of containerd's log. What survives a hard kill (or a panic in a test
// goroutine, which ends the process at once) is reaped by the next Setup and
// by `make test-integration`.
func Main(m *testing.M, out **Env) (code int) {
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	start := time.Now()
	e, err := Setup(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: setup: %v\n", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "testenv: ready in %v: containerd %s namespace %s snapshotter %s\n",
			time.Since(start).Round(time.Millisecond), e.Address, e.Namespace, e.Snapshotter)
	}
	if e.PodhostBuildErr != nil {
		fmt.Fprintf(os.Stderr, "testenv: podhost binary not built (tests that need it will fail): %v\n", e.PodhostBuildErr)
	}
	*out = e

	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		s, ok := <-sigc
		if !ok {
			return
		}
		fmt.Fprintf(os.Stderr, "testenv: got %v, cleaning up\n", s)
		if err := e.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: close: %v\n", err)
		}
		os.Exit(128 + int(s.(syscall.Signal)))
	}()

	if f := flag.Lookup("test.timeout"); f != nil {
		if d, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && d-time.Since(start) > time.Minute {
			t := time.AfterFunc(d-time.Since(start)-30*time.Second, func() {
				fmt.Fprintf(os.Stderr, "testenv: -timeout %v is about to expire: closing the env now\n", d)
				e.Close()
			})
			defer t.Stop()
		}
	}

	defer func() {
		r := recover()
		signal.Stop(sigc)
		if code != 0 || r != nil {
			fmt.Fprintf(os.Stderr, "testenv: tail of %s:\n%s\n", e.ContainerdLog, e.LogTail(40))
		}
		if err := e.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: close: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
		if r != nil {
			panic(r)
		}
	}()
	return m.Run()
}
