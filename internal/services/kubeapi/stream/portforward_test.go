package stream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/services/kubeapi/stream/streamtest"
)

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
	for _, d := range streamtest.Dialers {
		t.Run(d.Name, func(t *testing.T) {
			var ports sync.Map
			_, cfg, pod := api(t, &fakeRuntime{forward: echo(&ports)}, Options{})
			addr := streamtest.Forward(t, d, cfg, pod, 8080)[8080]
			var wg sync.WaitGroup
			for i := range 2 {
				data := bytes.Repeat([]byte{byte('a' + i)}, 1<<20)
				wg.Go(func() {
					got, err := streamtest.HalfCloseTrip(addr, data)
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
	addr := streamtest.Forward(t, streamtest.Dialers[0], cfg, pod, 8080)[8080]
	results := make(chan error, 2)
	send := func(msg string) {
		got, err := streamtest.HalfCloseTrip(addr, []byte(msg))
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
