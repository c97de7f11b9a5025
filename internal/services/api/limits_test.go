package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// countingListener counts the connections it accepted that are not
// closed yet, and the most at once. Under the limit listener, a
// connection's count drops before its slot is given to the next one.
type countingListener struct {
	net.Listener
	mu         sync.Mutex
	open, peak int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.peak = max(l.peak, l.open)
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) get() (open, peak int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.peak
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}

// serveLimited serves the API of b on a fresh socket within lim, as Listen
// does, through a countingListener; it returns the socket's path.
func serveLimited(t *testing.T, b Backend, lim Limits) (string, *countingListener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ph-api-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "api.sock")
	raw, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: raw}
	hs := &http.Server{Handler: NewServer(b, slog.New(slog.DiscardHandler)).srv.Handler}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(lim.Apply(hs, cl)) }()
	t.Cleanup(func() {
		_ = hs.Close()
		<-done
		os.RemoveAll(dir)
	})
	return sock, cl
}

// listen serves b with Server.Listen within lim.
func listen(t *testing.T, b Backend, lim Limits, setup ...func(*Server)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ph-api-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "api.sock")
	srv := NewServer(b, slog.New(slog.DiscardHandler))
	srv.Limits = lim
	for _, f := range setup {
		f(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Listen(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	})
	return sock
}

// dialRetry dials the socket, waiting for the server to create it.
func dialRetry(t *testing.T, sock string) net.Conn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// 3000 clients each make one keep-alive request and then sit idle: the
// server closes every one after the idle timeout, and never serves more
// than MaxConns at once (the others wait in the listen backlog, then get
// their answer). Without an idle timeout the connections stay open and
// each keeps a goroutine.
func TestIdleConnectionsAreClosed(t *testing.T) {
	const clients, maxConns = 3000, 256
	lim := Limits{ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 200 * time.Millisecond, MaxConns: maxConns, MaxHeaderBytes: 4 << 10}
	sock, cl := serveLimited(t, fakeBackend{}, lim)
	conns := make([]net.Conn, clients)
	conns[0] = dialRetry(t, sock)
	for i := 1; i < clients; i++ {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns[i] = c
	}
	start := time.Now()
	for i, c := range conns {
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: podhost\r\n\r\n"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	for i, c := range conns {
		answeredThenClosed(t, i, c)
	}
	open, peak := cl.get()
	t.Logf("%d idle connections answered and closed in %v; at most %d served at once", clients, time.Since(start), peak)
	if peak > maxConns {
		t.Errorf("%d connections served at once, want at most %d", peak, maxConns)
	}
	waitCond(t, "every connection closed on the server's side", func() bool { open, _ = cl.get(); return open == 0 })
}

// answeredThenClosed reads the answer to the request sent on c, then
// requires the server to close c (its idle timeout).
func answeredThenClosed(t *testing.T, i int, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute)) // generous: the machine is loaded
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("connection %d: no answer: %v", i, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("connection %d: not closed by the server after its idle timeout: %v", i, err)
	}
	c.Close()
}

// Server.Listen serves within its Limits: an idle keep-alive connection is
// closed after the idle timeout.
func TestListenAppliesLimits(t *testing.T) {
	sock := listen(t, fakeBackend{}, Limits{ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 100 * time.Millisecond, MaxConns: 2})
	c := dialRetry(t, sock)
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: podhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	answeredThenClosed(t, 0, c)
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A watch lasts longer than the idle timeout: a stream is a response being
// written, not an idle connection.
func TestStreamsOutliveTheIdleTimeout(t *testing.T) {
	b := &kubeFake{pods: []*corev1.Pod{uidPod("a", corev1.PodPending)}, changed: make(chan struct{})}
	lim := Limits{ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond, MaxConns: 4}
	sock := listen(t, fakeBackend{}, lim, withKube(t, b))
	dialRetry(t, sock).Close()
	c := NewClient(sock)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	var first time.Time
	err := c.WatchPods(ctx, func(e WatchEvent) error {
		got = append(got, e.Type+" "+e.Object.Name+" "+string(e.Object.Status.Phase))
		if len(got) == 1 {
			first = time.Now()
			go func() {
				time.Sleep(5 * lim.IdleTimeout) // the stream sits idle much longer than the timeout
				b.set(uidPod("a", corev1.PodRunning))
			}()
		}
		if len(got) == 2 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != "MODIFIED a Running" || time.Since(first) < 5*lim.IdleTimeout {
		t.Fatalf("events %v after %v", got, time.Since(first))
	}
}
