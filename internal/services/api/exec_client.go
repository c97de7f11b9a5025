package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	httpstreamspdy "k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// ExecRequest selects the container and the command to run in it.
type ExecRequest struct {
	Namespace, Name, Container string
	Command                    []string
	Stdin, TTY                 bool
	// Width and Height, with TTY, are the client's terminal size when the
	// command starts (0: unknown); Resize carries its later sizes.
	Width, Height uint16
	Resize        <-chan runtimeapi.TerminalSize
}

// Exec runs req.Command in a running container through the Kubernetes
// API's pods/exec and returns its exit code. With req.Stdin, stdin is
// copied to the command until its EOF (a nil stdin is an empty one). With
// req.TTY all output comes on stdout. Cancelling ctx closes the
// connection, which ends the command (the daemon's stream server kills
// it); Exec then returns ctx's error.
//
// The protocol is SPDY, through client-go's remotecommand: its WebSocket
// executor cannot dial a unix socket (it ignores rest.Config's transport
// and dialer, kubernetes/kubernetes#129915), while its SPDY round tripper
// takes the socket's transport for the upgrade.
func (c *Client) Exec(ctx context.Context, req ExecRequest, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	p, err := c.GetPod(ctx, req.Namespace, req.Name)
	if err != nil {
		return -1, err // the pod's NotFound as the API words it
	}
	if err := notRunning(p, req.Container); err != nil {
		return -1, err
	}
	if req.Stdin && stdin == nil {
		stdin = strings.NewReader("")
	}
	if !req.Stdin {
		stdin = nil
	}
	u := c.core.Post().Namespace(req.Namespace).Resource("pods").Name(req.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: req.Container, Command: req.Command,
			Stdin: req.Stdin, Stdout: true, Stderr: !req.TTY, TTY: req.TTY}, c.params()).URL()
	up, err := httpstreamspdy.NewRoundTripperWithConfig(httpstreamspdy.RoundTripperConfig{UpgradeTransport: c.tr, PingPeriod: 5 * time.Second})
	if err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	wrapper, err := rest.HTTPWrappersForConfig(c.cfg, up)
	if err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(wrapper, clientspdy.NewUpgraderForStreaming(up), http.MethodPost, u)
	if err != nil {
		return -1, fmt.Errorf("exec: %w", err)
	}
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Tty: req.TTY}
	if !req.TTY {
		opts.Stderr = stderr
	} else {
		opts.TerminalSizeQueue = &sizeQueue{ctx: ctx, first: runtimeapi.TerminalSize{Width: req.Width, Height: req.Height}, next: req.Resize}
	}
	err = ex.StreamWithContext(ctx, opts)
	var exit utilexec.ExitError
	switch {
	case ctx.Err() != nil:
		return -1, ctx.Err()
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitStatus(), nil
	}
	return -1, execError(c.fromKube(err))
}

// notRunning is podhost's words for a container of p that is known and
// does not run (the kube API answers the kubelet's terser `container not
// found ("c")`); nil otherwise, the stream server then decides.
func notRunning(p *corev1.Pod, container string) error {
	if container == "" {
		container, _ = podview.DefaultContainer(p)
	}
	if !slices.Contains(podview.ContainerNames(p), container) || podview.ContainerStatus(p, container) == nil {
		return nil
	}
	if msg := podview.NotRunning(p, container); msg != "" {
		return &statusError{msg: msg, sentinel: ErrConflict}
	}
	return nil
}

// execError drops SPDY's "unable to upgrade connection: " before the API's
// words (container not found, not running).
func execError(err error) error {
	if msg, ok := strings.CutPrefix(err.Error(), "unable to upgrade connection: "); ok {
		return errors.New(msg)
	}
	return err
}

// sizeQueue is remotecommand's TerminalSizeQueue over the request's sizes:
// the size at the start, then each resize, until ctx ends.
type sizeQueue struct {
	ctx   context.Context
	first runtimeapi.TerminalSize
	sent  bool
	next  <-chan runtimeapi.TerminalSize
}

func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	if !q.sent {
		q.sent = true
		if q.first.Width > 0 && q.first.Height > 0 {
			return &remotecommand.TerminalSize{Width: q.first.Width, Height: q.first.Height}
		}
	}
	select {
	case <-q.ctx.Done():
		return nil
	case sz, ok := <-q.next:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: sz.Width, Height: sz.Height}
	}
}
