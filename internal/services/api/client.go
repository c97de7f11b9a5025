package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ErrDaemonDown means nothing answers on the socket.
var ErrDaemonDown = errors.New("podhost daemon is not running")

// Client talks to the daemon over its unix socket.
type Client struct {
	socket string
	hc     *http.Client
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
	return &Client{socket: path, hc: &http.Client{Transport: tr}}
}

func (c *Client) get(ctx context.Context, path string) (*http.Response, error) {
	return c.do(ctx, http.MethodGet, path)
}

// do sends a request without a body; non-200 answers are errors.
func (c *Client) do(ctx context.Context, method, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://podhost"+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (socket %s)", ErrDaemonDown, c.socket)
		}
		return nil, err
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

// ListPods returns every pod with its status.
func (c *Client) ListPods(ctx context.Context) (*corev1.PodList, error) {
	var l corev1.PodList
	return &l, c.getJSON(ctx, "/v1/pods", &l)
}

// GetPod returns one pod.
func (c *Client) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	return &p, c.getJSON(ctx, "/v1/pods/"+url.PathEscape(namespace)+"/"+url.PathEscape(name), &p)
}

// Events returns a pod's events.
func (c *Client) Events(ctx context.Context, namespace, name string) ([]Event, error) {
	var evs []Event
	return evs, c.getJSON(ctx, "/v1/pods/"+url.PathEscape(namespace)+"/"+url.PathEscape(name)+"/events", &evs)
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

// Node returns this machine as a core/v1 Node.
func (c *Client) Node(ctx context.Context) (*corev1.Node, error) {
	var n corev1.Node
	return &n, c.getJSON(ctx, "/v1/node", &n)
}

// Logs copies a container log to w.
func (c *Client) Logs(ctx context.Context, req LogRequest, w io.Writer) error {
	q := url.Values{}
	q.Set("container", req.Container)
	q.Set("follow", strconv.FormatBool(req.Follow))
	q.Set("previous", strconv.FormatBool(req.Previous))
	q.Set("timestamps", strconv.FormatBool(req.Timestamps))
	q.Set("tail", strconv.Itoa(req.Tail))
	if !req.Since.IsZero() {
		q.Set("sinceTime", req.Since.UTC().Format(time.RFC3339Nano))
	}
	resp, err := c.get(ctx, "/v1/pods/"+url.PathEscape(req.Namespace)+"/"+url.PathEscape(req.Name)+"/log?"+q.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
