package stream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream" //nolint:staticcheck // client-go's portforward Dialer still returns it
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// dialers are kubectl port-forward's two: SPDY tunnelled in a WebSocket
// (first choice) and plain SPDY.
var dialers = []struct {
	name string
	new  func(*restclient.Config, *url.URL) (httpstream.Dialer, error)
}{
	{"websocket-tunnel", func(c *restclient.Config, u *url.URL) (httpstream.Dialer, error) {
		return portforward.NewSPDYOverWebsocketDialer(u, c)
	}},
	{"spdy", func(c *restclient.Config, u *url.URL) (httpstream.Dialer, error) {
		rt, up, err := spdy.RoundTripperFor(c)
		if err != nil {
			return nil, err
		}
		return spdy.NewDialer(up, &http.Client{Transport: rt}, "POST", u), nil
	}},
}

// forward starts a kubectl-style port-forward of remote port 8080 and
// returns the local address.
func forward(t *testing.T, cfg *restclient.Config, pod string, newDialer func(*restclient.Config, *url.URL) (httpstream.Dialer, error)) string {
	t.Helper()
	u, err := url.Parse(pod + "portforward")
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDialer(cfg, u)
	if err != nil {
		t.Fatal(err)
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(d, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	t.Cleanup(func() {
		close(stop)
		if err := <-done; err != nil {
			t.Errorf("ForwardPorts: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("ForwardPorts: %v", err)
	case <-time.After(wait):
		t.Fatal("port-forward not ready")
	}
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local)
}

// roundTrip sends data on a new connection to addr, half-closes, and
// returns all it reads back.
func roundTrip(addr string, data []byte) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
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

// echo forwards by echoing the stream: what the client sends comes back,
// until it half-closes.
func echo(ports *sync.Map) func(context.Context, int32, io.ReadWriteCloser) error {
	return func(_ context.Context, port int32, stream io.ReadWriteCloser) error {
		defer stream.Close()
		n, _ := ports.LoadOrStore(port, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		_, err := io.Copy(stream, stream)
		return err
	}
}

// TestPortForward: two connections at once through one port-forward, a
// MiB each way on each, over the WebSocket tunnel and over SPDY.
func TestPortForward(t *testing.T) {
	for _, d := range dialers {
		t.Run(d.name, func(t *testing.T) {
			var ports sync.Map
			_, cfg, pod := api(t, &fakeRuntime{forward: echo(&ports)}, Options{})
			addr := forward(t, cfg, pod, d.new)
			var wg sync.WaitGroup
			for i := range 2 {
				data := bytes.Repeat([]byte{byte('a' + i)}, 1<<20)
				wg.Go(func() {
					got, err := roundTrip(addr, data)
					if err != nil || !bytes.Equal(got, data) {
						t.Errorf("connection %d: %d of %d bytes back, err %v", i, len(got), len(data), err)
					}
				})
			}
			wg.Wait()
			n, ok := ports.Load(int32(8080))
			if !ok || n.(*atomic.Int32).Load() != 2 {
				t.Errorf("forwards to port 8080: %v, want 2", n)
			}
		})
	}
}

// TestPortForwardBound: beyond its bound a session's connection waits
// for a slot, then is forwarded.
func TestPortForwardBound(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	rt := &fakeRuntime{forward: func(ctx context.Context, _ int32, stream io.ReadWriteCloser) error {
		defer stream.Close()
		if calls.Add(1) == 1 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		_, err := io.Copy(stream, stream)
		return err
	}}
	s, cfg, pod := api(t, rt, Options{})
	queued := make(chan struct{}, 1)
	s.maxForwards, s.forwardQueued = 1, func() { queued <- struct{}{} }
	addr := forward(t, cfg, pod, dialers[0].new)
	results := make(chan error, 2)
	send := func(msg string) {
		got, err := roundTrip(addr, []byte(msg))
		if err == nil && string(got) != msg {
			err = fmt.Errorf("%s: got %q back", msg, got)
		}
		results <- err
	}
	go send("first")
	waitFor(t, "the first forward", func() bool { return calls.Load() == 1 })
	go send("second")
	select {
	case <-queued:
	case <-time.After(wait):
		t.Fatal("the second connection did not wait for a slot")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("Runtime.PortForward called %d times while the bound is 1", n)
	}
	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Error(err)
		}
	}
}

// waitFor polls cond (a state only a poll can see) until the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
