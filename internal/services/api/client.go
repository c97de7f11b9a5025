package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// ErrDaemonDown means nothing answers on the socket.
var ErrDaemonDown = errors.New("podhost daemon is not running")

// Client is the CLI's client of the daemon's socket. What the Kubernetes
// API serves (pods, events, logs, exec, the node, metrics.k8s.io) it reads
// there, through client-go's RESTClient and remotecommand (kube.go,
// observe_client.go, exec_client.go); /v1 only for what that API has no
// resource for: refused manifest files, containerd's health, rollouts,
// readiness (decisions.md 23).
type Client struct {
	socket string
	tr     *http.Transport
	hc     *http.Client
	cfg    *rest.Config
	core   *rest.RESTClient // /api/v1
	mx     *rest.RESTClient // /apis/metrics.k8s.io/v1beta1
	// Warn, when set, receives the text of each Warning header of a
	// response (refused manifest files, a containerd outage).
	Warn func(text string)
}

// NewClient returns a client for the socket at path.
func NewClient(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	c := &Client{socket: path, tr: tr, hc: &http.Client{Transport: tr}}
	c.cfg = &rest.Config{Host: "http://podhost", Transport: tr, QPS: -1, // no client-side rate limit: one local daemon
		WarningHandler: warnTo(func(text string) {
			if c.Warn != nil {
				c.Warn(text)
			}
		})}
	c.core, c.mx = c.restClients()
	return c
}

// warnTo is a rest.WarningHandler calling a function with each warning's text.
type warnTo func(text string)

func (f warnTo) HandleWarningHeader(code int, _, text string) {
	if code == 299 && text != "" {
		f(text)
	}
}

func (c *Client) get(ctx context.Context, path string) (*http.Response, error) {
	return c.do(ctx, http.MethodGet, path)
}

// do sends a request without a body to a /v1 path; non-200 answers are
// errors.
func (c *Client) do(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://podhost"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.fromKube(err)
	}
	if c.Warn != nil {
		for _, v := range resp.Header.Values("Warning") {
			c.Warn(parseWarning(v))
		}
	}
	if resp.StatusCode == http.StatusBadRequest {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return nil, errors.New(strings.TrimSpace(string(b)))
	}
	if resp.StatusCode == http.StatusNotFound {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return nil, &statusError{msg: strings.TrimSpace(string(b)), sentinel: ErrNotFound} // the server's words, as they are
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return resp, nil
}

// fromKube turns a request's error into the client's: ErrDaemonDown when
// nothing answers on the socket; an API Status as its message, matching
// ErrNotFound (404) or ErrConflict (409) with errors.Is.
func (c *Client) fromKube(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w (socket %s)", ErrDaemonDown, c.socket)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return err
	}
	msg := st.Status().Message
	switch st.Status().Code {
	case http.StatusNotFound:
		return &statusError{msg: msg, sentinel: ErrNotFound}
	case http.StatusConflict:
		return &statusError{msg: msg, sentinel: ErrConflict}
	}
	return errors.New(msg)
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.get(ctx, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// Ready reports whether the daemon finished its first sync.
func (c *Client) Ready(ctx context.Context) error {
	resp, err := c.get(ctx, "/readyz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// FileErrors returns manifest files that failed to load.
func (c *Client) FileErrors(ctx context.Context) ([]FileError, error) {
	var fe []FileError
	return fe, c.getJSON(ctx, "/v1/errors", &fe)
}

// Runtime returns containerd's health as the daemon sees it.
func (c *Client) Runtime(ctx context.Context) (RuntimeStatus, error) {
	var rs RuntimeStatus
	return rs, c.getJSON(ctx, "/v1/runtime", &rs)
}
