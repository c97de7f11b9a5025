//go:build integration

package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// containerdConfig is the private containerd's config.toml. Every path
// containerd would otherwise take from its defaults (/var/lib/containerd,
// /run/containerd, /opt/containerd, the NRI socket) points into the Env's
// dir or is switched off. CRI is disabled: podhost talks to containerd
// directly, and the CRI plugins would start their own CNI and image handling.
const containerdConfig = `# written by podhost internal/testenv
version = 3
root = %q
state = %q
oom_score = 0
disabled_plugins = [
  "io.containerd.grpc.v1.cri",
  "io.containerd.cri.v1.runtime",
  "io.containerd.cri.v1.images",
  "io.containerd.podsandbox.controller.v1.podsandbox",
  "io.containerd.nri.v1.nri",
]

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`

func (e *Env) writeContainerdConfig() error {
	cfg := fmt.Sprintf(containerdConfig, e.Root, e.State, e.Address, e.TTRPCAddress,
		filepath.Join(e.Dir, "opt"))
	return os.WriteFile(e.ConfigPath, []byte(cfg), 0o644)
}

// startContainerd starts the private containerd and waits until it is
// ready: containerd sends READY=1 to $NOTIFY_SOCKET once it serves, then a
// health check over the client confirms it.
func (e *Env) startContainerd(ctx context.Context) error {
	notifyPath := filepath.Join(e.Dir, "notify.sock")
	os.Remove(notifyPath)
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("containerd notify socket: %w", err)
	}
	defer func() {
		notify.Close()
		os.Remove(notifyPath)
	}()

	logf, err := os.OpenFile(e.ContainerdLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "---- testenv: starting containerd at %s\n", time.Now().Format(time.RFC3339Nano))

	cmd := exec.Command(filepath.Join(e.BinDir, "containerd"), "--config", e.ConfigPath)
	cmd.Env = append(filterEnv(os.Environ(), "PATH", "NOTIFY_SOCKET", "CONTAINERD_ADDRESS", "CONTAINERD_NAMESPACE"),
		"PATH="+e.BinDir+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"NOTIFY_SOCKET="+notifyPath,
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = e.Dir
	// Own process group: a ^C in the terminal reaches the test binary, which
	// then closes the Env in order, not containerd directly. Pdeathsig: if
	// the test binary dies (timeout, SIGKILL), containerd dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// Pdeathsig fires when the *thread* that forked exits. Keep this
		// goroutine on its thread for as long as containerd runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		e.mu.Lock()
		e.containerdErr = err
		e.mu.Unlock()
		close(exited)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start containerd: %w", err)
	}
	e.mu.Lock()
	e.cmd, e.exited = cmd, exited
	e.mu.Unlock()
	e.meta.ContainerdPID = cmd.Process.Pid
	e.meta.ContainerdStart = procStart(cmd.Process.Pid)
	if err := writeMeta(&e.meta); err != nil {
		return err
	}

	ready := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := notify.ReadFrom(buf)
			if err != nil {
				return
			}
			for _, l := range strings.Split(string(buf[:n]), "\n") {
				if l == "READY=1" {
					close(ready)
					return
				}
			}
		}
	}()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	select {
	case <-ready:
	case <-exited:
		return fmt.Errorf("containerd exited during startup (%v); log %s:\n%s", e.containerdErr, e.ContainerdLog, e.LogTail(30))
	case <-timeout.C:
		return fmt.Errorf("containerd did not report READY=1 within a minute; log %s:\n%s", e.ContainerdLog, e.LogTail(30))
	case <-ctx.Done():
		return fmt.Errorf("waiting for containerd: %w", ctx.Err())
	}
	return nil
}

// connect creates the Env's client (first start) or makes the existing
// one reconnect at once (after a restart), then waits until it is served.
func (e *Env) connect(ctx context.Context) error {
	if e.client == nil {
		c, err := client.New(e.Address, client.WithDefaultNamespace(e.Namespace), client.WithTimeout(2*time.Second))
		if err != nil {
			return fmt.Errorf("containerd client: %w", err)
		}
		e.client = c
	}
	conn, ok := e.client.Conn().(*grpc.ClientConn)
	if !ok {
		return errors.New("containerd client has no gRPC connection")
	}
	conn.ResetConnectBackoff()
	conn.Connect()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Wait for the connection to become ready (no polling: state changes).
	for st := conn.GetState(); st != connectivity.Ready; st = conn.GetState() {
		if st == connectivity.TransientFailure {
			conn.ResetConnectBackoff()
		}
		if !conn.WaitForStateChange(cctx, st) {
			return fmt.Errorf("containerd at %s: connection stuck in %v: %w", e.Address, st, cctx.Err())
		}
	}
	if _, err := e.client.Version(cctx); err != nil {
		return fmt.Errorf("containerd at %s: version: %w", e.Address, err)
	}
	return nil
}

// pickSnapshotter returns "overlayfs" when containerd's overlayfs plugin
// loaded (the kernel and the backing filesystem support it), else "native".
func (e *Env) pickSnapshotter(ctx context.Context) (string, error) {
	resp, err := e.client.IntrospectionService().Plugins(ctx, `type=="io.containerd.snapshotter.v1"`)
	if err != nil {
		return "", fmt.Errorf("containerd plugins: %w", err)
	}
	ok := map[string]bool{}
	for _, p := range resp.Plugins {
		ok[p.ID] = p.InitErr == nil
	}
	switch {
	case ok["overlayfs"]:
		return "overlayfs", nil
	case ok["native"]:
		return "native", nil
	}
	return "", errors.New("containerd has neither the overlayfs nor the native snapshotter")
}

// stopContainerd stops the private containerd: SIGTERM, then SIGKILL after
// grace. Shims and containers keep running, as with a real containerd
// restart.
func (e *Env) stopContainerd(grace time.Duration) error {
	e.mu.Lock()
	cmd, exited := e.cmd, e.exited
	e.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
	default:
		_ = cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-exited:
			t.Stop()
		case <-t.C:
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	e.mu.Lock()
	e.cmd, e.exited = nil, nil
	e.mu.Unlock()
	return nil
}

// ContainerdPID returns the PID of the running private containerd, or 0.
func (e *Env) ContainerdPID() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd == nil {
		return 0
	}
	select {
	case <-e.exited:
		return 0
	default:
		return e.cmd.Process.Pid
	}
}

// RestartContainerd stops the private containerd (SIGTERM) and starts it
// again with the same config and dirs, as a containerd upgrade or crash
// recovery would. Running containers and their shims survive. The client
// returned by Client stays valid: it is reconnected before this returns.
func (e *Env) RestartContainerd(ctx context.Context) error {
	if err := e.stopContainerd(15 * time.Second); err != nil {
		return err
	}
	if err := e.startContainerd(ctx); err != nil {
		return err
	}
	return e.connect(ctx)
}

// StopContainerd stops the private containerd (SIGTERM) and leaves it
// stopped, for tests of an outage; StartContainerd brings it back. Running
// containers and their shims survive.
func (e *Env) StopContainerd() error { return e.stopContainerd(15 * time.Second) }

// StartContainerd starts the private containerd stopped by StopContainerd
// and reconnects the client returned by Client.
func (e *Env) StartContainerd(ctx context.Context) error {
	if err := e.startContainerd(ctx); err != nil {
		return err
	}
	return e.connect(ctx)
}

// LogTail returns the last n lines of the private containerd's log.
func (e *Env) LogTail(n int) string {
	b, err := os.ReadFile(e.ContainerdLog)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

func filterEnv(env []string, names ...string) []string {
	out := env[:0:0]
outer:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}
