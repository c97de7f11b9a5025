// Package handler holds what probes (internal/kubelet/prober) and lifecycle hooks
// (internal/kubelet/lifecycle) share when they act on a container: the kubelet's
// port resolution, its HTTP GET request and transport, and a bounded output
// buffer for exec commands.
package handler

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
)

// MaxOutput caps what is kept of a command's output or a response body
// (the kubelet's 10 KiB).
const MaxOutput = 10 * 1024

// Execer runs a command in a running container (runtime.Runtime.Exec).
type Execer interface {
	Exec(ctx context.Context, id string, cmd []string, stdin io.Reader, stdout, stderr io.Writer, tty bool) (int, error)
}

// NewHTTPGetRequest builds the kubelet's request for an httpGet action
// (probe or hook): scheme://host:port/path with the action's headers, the
// given User-Agent and Accept */* unless set (an empty Accept removes it),
// Host from a Host header.
func NewHTTPGetRequest(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, host, userAgent string) (*http.Request, error) {
	port, err := ResolvePort(g.Port, c)
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("http request: %w", err)
	}
	headers := http.Header{}
	for _, hd := range g.HTTPHeaders {
		headers.Add(hd.Name, hd.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", userAgent)
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header, req.Host = headers, headers.Get("Host")
	return req, nil
}

// SameHostRedirects follows redirects on the same host only (the kubelet
// without followNonLocalRedirects), at most 10.
func SameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// NewTransport is the lifecycle hooks' transport: certificates are not
// verified, no keep-alives, no proxy, HTTP/1.1 only — the kubelet's
// insecureContainerLifecycleHTTPClient is a bare http.Transport with its
// own TLS config, which Go never upgrades to HTTP/2.
func NewTransport() *http.Transport {
	return &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives:   true,
		DisableCompression:  true,
		Proxy:               nil,
		DialContext:         Dialer().DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// NewProbeTransport is the probes' transport: NewTransport that also
// offers HTTP/2 over TLS (ALPN), as the kubelet's prober (pkg/probe/http
// NewWithTLSConfig wraps its transport with utilnet.SetTransportDefaults,
// which configures HTTP/2 on it).
func NewProbeTransport() *http.Transport {
	t := NewTransport()
	t.ForceAttemptHTTP2 = true
	return t
}

// Dialer sets SO_LINGER to 1 s, as the kubelet's probe dialer, so frequent
// probes do not pile up sockets waiting to close.
func Dialer() *net.Dialer {
	return &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
		})
		return errors.Join(err, serr)
	}}
}

// ResolvePort is the kubelet's ResolveContainerPort: a number, or the name
// of one of the container's ports (or a number written as a string).
func ResolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
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

// LimitedBuffer keeps the first Max bytes written to it by any number of
// goroutines (an exec's stdout and stderr).
type LimitedBuffer struct {
	Max int

	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LimitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.Max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *LimitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
