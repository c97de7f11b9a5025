// Package streamtest drives the streaming endpoints as kubectl does, with
// client-go's clients: for the stream package's unit tests and the
// integration tests. Not linked into podhost.
package streamtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// Wait bounds every wait on a condition: generous, machines are shared.
const Wait = 30 * time.Second

// Endpoints are the streaming endpoints (*stream.Server).
type Endpoints interface {
	Exec(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodExecOptions)
	Attach(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodAttachOptions)
	PortForward(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodPortForwardOptions)
}

// Mux routes /api/v1/namespaces/{ns}/pods/{name}/{exec,attach,portforward}
// to e as the API server will, the options from the query.
func Mux(e Endpoints, pod func(namespace, name string) (*corev1.Pod, error)) *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(sub string, h func(http.ResponseWriter, *http.Request, *corev1.Pod, url.Values)) {
		mux.HandleFunc("/api/v1/namespaces/{ns}/pods/{name}/"+sub, func(w http.ResponseWriter, r *http.Request) {
			p, err := pod(r.PathValue("ns"), r.PathValue("name"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			h(w, r, p, r.URL.Query())
		})
	}
	handle("exec", func(w http.ResponseWriter, r *http.Request, p *corev1.Pod, q url.Values) {
		e.Exec(w, r, p, &corev1.PodExecOptions{Container: q.Get("container"), Command: q["command"],
			Stdin: flag(q, "stdin"), Stdout: flag(q, "stdout"), Stderr: flag(q, "stderr"), TTY: flag(q, "tty")})
	})
	handle("attach", func(w http.ResponseWriter, r *http.Request, p *corev1.Pod, q url.Values) {
		e.Attach(w, r, p, &corev1.PodAttachOptions{Container: q.Get("container"),
			Stdin: flag(q, "stdin"), Stdout: flag(q, "stdout"), Stderr: flag(q, "stderr"), TTY: flag(q, "tty")})
	})
	handle("portforward", func(w http.ResponseWriter, r *http.Request, p *corev1.Pod, _ url.Values) {
		e.PortForward(w, r, p, nil)
	})
	return mux
}

func flag(q url.Values, k string) bool { b, _ := strconv.ParseBool(q.Get(k)); return b }

// URL is the URL kubectl builds for exec or attach (sub) of the pod at
// podURL (".../pods/<name>/"): stdout always, stderr unless tty.
func URL(t testing.TB, podURL, sub, container string, stdin, tty bool, cmd ...string) *url.URL {
	t.Helper()
	q := url.Values{"container": {container}, "stdout": {"true"}, "command": cmd}
	if stdin {
		q.Set("stdin", "true")
	}
	if tty {
		q.Set("tty", "true")
	} else {
		q.Set("stderr", "true")
	}
	u, err := url.Parse(podURL + sub + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Executor makes one of kubectl's exec/attach clients.
type Executor struct {
	Name string
	New  func(*restclient.Config, *url.URL) (remotecommand.Executor, error)
}

// Executors are kubectl's two: WebSocket v5 (first choice) and SPDY.
var Executors = []Executor{
	{"websocket", func(c *restclient.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewWebSocketExecutor(c, "GET", u.String())
	}},
	{"spdy", func(c *restclient.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewSPDYExecutor(c, "POST", u)
	}},
}

// Dialer makes one of kubectl port-forward's dialers.
type Dialer struct {
	Name string
	New  func(*restclient.Config, *url.URL) (httpstream.Dialer, error)
}

// Dialers are kubectl port-forward's two: SPDY tunnelled in a WebSocket
// (first choice) and plain SPDY.
var Dialers = []Dialer{
	{"websocket-tunnel", func(c *restclient.Config, u *url.URL) (httpstream.Dialer, error) {
		return portforward.NewSPDYOverWebsocketDialerForStreaming(u, c)
	}},
	{"spdy", func(c *restclient.Config, u *url.URL) (httpstream.Dialer, error) {
		rt, up, err := spdy.RoundTripperFor(c)
		if err != nil {
			return nil, err
		}
		return spdy.NewDialerForStreaming(up, &http.Client{Transport: rt}, "POST", u), nil
	}},
}

// Forward runs a kubectl-style port-forward of the remote ports through
// the pod at podURL until the test ends and returns the local address of
// each remote port.
func Forward(t testing.TB, d Dialer, cfg *restclient.Config, podURL string, ports ...int) map[int]string {
	t.Helper()
	u, err := url.Parse(podURL + "portforward")
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := d.New(cfg, u)
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, p := range ports {
		specs = append(specs, fmt.Sprintf("0:%d", p))
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, specs, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	t.Cleanup(func() {
		close(stop)
		if err := <-done; err != nil {
			t.Errorf("%s: ForwardPorts: %v", d.Name, err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("%s: ForwardPorts: %v", d.Name, err)
	case <-time.After(Wait):
		t.Fatalf("%s: port-forward not ready", d.Name)
	}
	fwd, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	local := map[int]string{}
	for _, p := range fwd {
		local[int(p.Remote)] = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p.Local)))
	}
	return local
}

// HalfCloseTrip sends data on a new connection to addr, half-closes and
// returns all it reads back.
func HalfCloseTrip(addr string, data []byte) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, Wait)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * Wait))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		return got, err
	}
	return got, <-werr
}

// SizeQueue hands a client's terminal sizes out in order, then nil once
// Done is closed (remotecommand.TerminalSizeQueue).
type SizeQueue struct {
	Sizes chan remotecommand.TerminalSize
	Done  chan struct{}
}

// NewSizeQueue queues sizes (width, height pairs).
func NewSizeQueue(sizes ...remotecommand.TerminalSize) *SizeQueue {
	q := &SizeQueue{Sizes: make(chan remotecommand.TerminalSize, len(sizes)), Done: make(chan struct{})}
	for _, s := range sizes {
		q.Sizes <- s
	}
	return q
}

func (q *SizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case s := <-q.Sizes:
		return &s
	case <-q.Done:
		return nil
	}
}
