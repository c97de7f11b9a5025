package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/services/api"
	"github.com/podhost/podhost/internal/services/kubeapi/stream"
)

// ttyDaemon is a daemon whose exec reports what it got: the request, then
// each terminal size, until the one it waits for.
type ttyDaemon struct {
	clienttest.FakeDaemon
	reqs    chan api.ExecRequest
	sizes   chan runtimeapi.TerminalSize
	resized runtimeapi.TerminalSize
}

func (d *ttyDaemon) Exec(ctx context.Context, pod *corev1.Pod, container string, cmd []string, stdin io.Reader, stdout, _ io.WriteCloser, tty bool, resize <-chan stream.TerminalSize) (int, error) {
	req := api.ExecRequest{Namespace: pod.Namespace, Name: pod.Name, Container: container, Command: cmd, Stdin: stdin != nil, TTY: tty, Resize: resize}
	if !tty {
		d.reqs <- req
		return 0, nil
	}
	// The first size comes as the first resize (remotecommand's): the
	// request's size is that one.
	select {
	case sz := <-resize:
		req.Width, req.Height = sz.Width, sz.Height
		d.reqs <- req
		d.sizes <- sz
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	_, _ = io.WriteString(stdout, "$ ") // a prompt: the connection is upgraded, resize frames are read
	for {
		select {
		case sz := <-resize:
			d.sizes <- sz
			if sz == d.resized {
				return 0, nil
			}
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
}

// exec -it on a terminal: a TTY of the terminal's size from the start (not
// 0×0), then its resizes (SIGWINCH), as kubectl's exec sends them.
func TestExecTerminalSize(t *testing.T) {
	master, slave := clienttest.OpenPTY(t, 100, 30)
	go func() { _, _ = io.Copy(io.Discard, master) }() // what the "command" writes
	d := &ttyDaemon{FakeDaemon: clienttest.FakeDaemon{PodList: []*corev1.Pod{clienttest.RunningWebPod()}, RuntimeStatus: api.RuntimeStatus{Healthy: true}}, reqs: make(chan api.ExecRequest, 1),
		sizes: make(chan runtimeapi.TerminalSize, 8), resized: runtimeapi.TerminalSize{Width: 120, Height: 40}}
	sock := serve(t, d)
	done := make(chan error, 1)
	go func() {
		code, err := Exec(context.Background(), ExecOptions{Socket: sock, Namespace: "default", Name: "web", Container: "c",
			Command: []string{"sh"}, Stdin: true, TTY: true}, cmdutil.IOStreams{In: slave, Out: slave, ErrOut: io.Discard})
		if err == nil && code != 0 {
			err = fmt.Errorf("exit code %d", code)
		}
		done <- err
	}()
	req := <-d.reqs
	if !req.TTY || req.Width != 100 || req.Height != 30 {
		t.Fatalf("request: tty %v, size %dx%d; want a TTY of 100x30", req.TTY, req.Width, req.Height)
	}
	if sz := <-d.sizes; sz != (runtimeapi.TerminalSize{Width: 100, Height: 30}) {
		t.Fatalf("first size %+v, want 100x30", sz)
	}
	clienttest.SetPTYSize(t, master, 120, 40)
	// What the terminal sends its foreground process; the CLI watches for
	// it from before its request.
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	select {
	case sz := <-d.sizes:
		if sz != d.resized {
			t.Fatalf("resized to %+v, want 120x40", sz)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the resize to 120x40 never reached the daemon")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
