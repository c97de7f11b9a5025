package prober

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podhost/podhost/internal/spec"
)

// maxOutput caps what a probe keeps of a command's output or a response
// body (the kubelet's 10 KiB).
const maxOutput = 10 * 1024

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
	exec      Execer
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
	out := &limitedBuffer{max: maxOutput}
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
	port, err := resolvePort(t.Port, req.container)
	if err != nil {
		return outcomeUnknown, "", err
	}
	d := probeDialer()
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
	client := &http.Client{Transport: h.transport, Timeout: timeout, CheckRedirect: sameHostRedirects}
	res, err := client.Do(hreq)
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxOutput))
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

// newHTTPRequest builds the kubelet's probe request: scheme://host:port/path
// with the probe's headers, a kube-probe User-Agent and Accept */* unless
// set (an empty Accept removes it), Host from a Host header.
func newHTTPRequest(ctx context.Context, req request) (*http.Request, error) {
	g := req.probe.HTTPGet
	host, err := probeHost(g.Host, req)
	if err != nil {
		return nil, err
	}
	port, err := resolvePort(g.Port, req.container)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("http probe request: %w", err)
	}
	headers := http.Header{}
	for _, hd := range g.HTTPHeaders {
		headers.Add(hd.Name, hd.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", UserAgent)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	hreq.Header, hreq.Host = headers, headers.Get("Host")
	return hreq, nil
}

// sameHostRedirects follows redirects on the same host only (the kubelet
// without followNonLocalRedirects), at most 10.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func newTransport() *http.Transport {
	return &http.Transport{
		// Probes do not verify certificates, as the kubelet's.
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives:   true,
		DisableCompression:  true,
		Proxy:               nil,
		DialContext:         probeDialer().DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// probeDialer sets SO_LINGER to 1 s, as the kubelet's probe dialer, so
// frequent probes do not pile up sockets waiting to close.
func probeDialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
		})
		return errors.Join(err, serr)
	}}
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

// resolvePort is the kubelet's ResolveContainerPort: a number, or the name
// of one of the container's ports (or a number written as a string).
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	port := -1
	switch p.Type {
	case intstr.Int:
		port = p.IntValue()
	case intstr.String:
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port = int(cp.ContainerPort)
			}
		}
		if port == -1 {
			n, err := strconv.Atoi(p.StrVal)
			if err != nil {
				return -1, fmt.Errorf("port %q not found in container %s", p.StrVal, c.Name)
			}
			port = n
		}
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("invalid port number: %d", port)
}

// limitedBuffer keeps the first max bytes written to it by any number of
// goroutines (an exec's stdout and stderr).
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
