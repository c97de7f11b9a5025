package prober

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/spec"
	"github.com/podhost/podhost/internal/kubelet/handler"
)

// UserAgent is sent by HTTP and gRPC probes unless a header sets one.
const UserAgent = "kube-probe/1.37"

// outcome is what one probe run reports (the kubelet's probe.Result).
type outcome int

const (
	outcomeUnknown outcome = iota
	outcomeSuccess
	outcomeWarning // success, with an event (e.g. a redirect not followed)
	outcomeFailure
)

// request is everything one probe run needs.
type request struct {
	pod         *corev1.Pod
	container   *corev1.Container
	containerID string
	podIP       string
	probe       *corev1.Probe
}

// runner runs one probe. An error means it could not run (no verdict).
type runner interface {
	run(ctx context.Context, req request) (outcome, string, error)
}

// handlers is the real runner: exec, httpGet, tcpSocket and grpc.
type handlers struct {
	exec      handler.Execer
	transport *http.Transport
}

func (h *handlers) run(ctx context.Context, req request) (outcome, string, error) {
	p := req.probe
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	switch {
	case p.Exec != nil:
		return h.doExec(ctx, req, timeout)
	case p.HTTPGet != nil:
		return h.doHTTP(ctx, req, timeout)
	case p.TCPSocket != nil:
		return doTCP(ctx, req, timeout)
	case p.GRPC != nil:
		return doGRPC(ctx, req, timeout)
	}
	return outcomeUnknown, "", errors.New("probe has no handler")
}

// doExec runs the command in the container: exit 0 succeeds, another exit
// code or the timeout fails. The command's $(VAR)s expand against the
// container's env values only (kubelet's ExpandContainerCommandOnlyStatic).
func (h *handlers) doExec(ctx context.Context, req request, timeout time.Duration) (outcome, string, error) {
	if h.exec == nil {
		return outcomeUnknown, "", errors.New("exec probes are not supported")
	}
	vars := make(map[string]string, len(req.container.Env))
	for _, e := range req.container.Env {
		vars[e.Name] = e.Value
	}
	cmd := make([]string, len(req.probe.Exec.Command))
	for i, s := range req.probe.Exec.Command {
		cmd[i] = spec.Expand(s, func(n string) (string, bool) { v, ok := vars[n]; return v, ok })
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &handler.LimitedBuffer{Max: handler.MaxOutput}
	code, err := h.exec.Exec(ectx, req.containerID, cmd, nil, out, out, false)
	switch {
	case err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return outcomeFailure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
	case err != nil:
		return outcomeUnknown, "", fmt.Errorf("exec probe: %w", err)
	case code != 0:
		return outcomeFailure, out.String(), nil
	}
	return outcomeSuccess, out.String(), nil
}

// doTCP succeeds when a connection opens.
func doTCP(ctx context.Context, req request, timeout time.Duration) (outcome, string, error) {
	t := req.probe.TCPSocket
	host, err := probeHost(t.Host, req)
	if err != nil {
		return outcomeUnknown, "", err
	}
	port, err := handler.ResolvePort(t.Port, req.container)
	if err != nil {
		return outcomeUnknown, "", err
	}
	d := handler.Dialer()
	d.Timeout = timeout
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return outcomeSuccess, "", nil
}

// doHTTP sends a GET: 200-399 succeeds (a redirect to another host is not
// followed and gives a warning), anything else or no answer fails.
func (h *handlers) doHTTP(ctx context.Context, req request, timeout time.Duration) (outcome, string, error) {
	hreq, err := newHTTPRequest(ctx, req)
	if err != nil {
		return outcomeUnknown, "", err
	}
	client := &http.Client{Transport: h.transport, Timeout: timeout, CheckRedirect: handler.SameHostRedirects}
	res, err := client.Do(hreq)
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, handler.MaxOutput))
	if err != nil {
		return outcomeUnknown, "", fmt.Errorf("http probe: read body: %w", err)
	}
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return outcomeWarning, "Probe terminated redirects, Response body: " + string(b), nil
		}
		return outcomeSuccess, string(b), nil
	}
	// Like the kubelet, the failure message leaves the body out.
	return outcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}

// newHTTPRequest builds the probe's request (handler.NewHTTPGetRequest).
func newHTTPRequest(ctx context.Context, req request) (*http.Request, error) {
	host, err := probeHost(req.probe.HTTPGet.Host, req)
	if err != nil {
		return nil, err
	}
	hreq, err := handler.NewHTTPGetRequest(ctx, req.probe.HTTPGet, req.container, host, UserAgent)
	if err != nil {
		return nil, fmt.Errorf("http probe: %w", err)
	}
	return hreq, nil
}

// probeHost is the probe's host, else the pod's IP (the host's for
// hostNetwork pods, loopback if the host IP is unknown).
func probeHost(host string, req request) (string, error) {
	switch {
	case host != "":
		return host, nil
	case req.podIP != "":
		return req.podIP, nil
	case req.pod != nil && req.pod.Spec.HostNetwork:
		return "127.0.0.1", nil
	}
	return "", errors.New("pod has no IP")
}
