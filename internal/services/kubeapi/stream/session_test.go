package stream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/klog/v2"

	"github.com/podhost/podhost/internal/services/kubeapi/stream/streamtest"
)

// klogOut receives klog's output (RouteKlog, set once before any test:
// klog's logger must not change while anything logs).
var klogOut lockedBuffer

func TestMain(m *testing.M) {
	RouteKlog(slog.New(slog.NewTextHandler(&klogOut, &slog.HandlerOptions{Level: slog.LevelDebug})))
	// Upstream's own tail ends: client-go's WebSocket client pings until
	// its next ping fails once the client dropped the connection
	// (TestHangup); spdystream hands a close error over for up to 1s.
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("k8s.io/client-go/tools/remotecommand.(*heartbeat).start"),
		goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}

// blockingExec is an exec that says "running" on stdout and runs until
// its context ends: started is closed when it runs, ended receives ctx's
// error.
func blockingExec(started chan struct{}, ended chan error) *fakeRuntime {
	return &fakeRuntime{exec: func(ctx context.Context, _ string, _ []string, _ io.Reader, stdout, _ io.WriteCloser, _ bool, _ <-chan TerminalSize) (int, error) {
		close(started)
		if _, err := io.WriteString(stdout, "running\n"); err != nil {
			return -1, err
		}
		<-ctx.Done()
		ended <- ctx.Err()
		return -1, ctx.Err()
	}}
}

// TestHangup: when the client's connection drops the Runtime's context
// ends (the exec's process is killed), over both protocols: net/http no
// longer watches a hijacked connection.
func TestHangup(t *testing.T) {
	for _, ex := range streamtest.Executors {
		t.Run(ex.Name, func(t *testing.T) {
			started, ended := make(chan struct{}), make(chan error, 1)
			_, cfg, pod := api(t, blockingExec(started, ended), Options{})
			net := newDropProxy(t, cfg.Host)
			pod = net.url + strings.TrimPrefix(pod, cfg.Host)
			cfg.Host = net.url
			e, err := ex.New(cfg, streamtest.URL(t, pod, "exec", "c", false, false, "sleep"))
			if err != nil {
				t.Fatal(err)
			}
			client, running := make(chan error, 1), &firstWrite{c: make(chan struct{})}
			go func() {
				client <- e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: running, Stderr: io.Discard})
			}()
			select {
			case <-running.c: // the client is set up and streaming
			case err := <-client:
				t.Fatalf("exec ended before it started: %v", err)
			case <-time.After(wait):
				t.Fatal("exec did not start")
			}
			net.drop()
			select {
			case err := <-ended:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("the Runtime's context ended with %v", err)
				}
			case <-time.After(wait):
				t.Fatal("the Runtime's context did not end when the client's connection dropped")
			}
			// client-go's outcome: its SPDY client reads a dropped connection as success
			if err := <-client; ex.Name == "websocket" && err == nil {
				t.Error("the WebSocket client saw success after its connection dropped")
			}
		})
	}
}

// firstWrite closes c at the first write.
type firstWrite struct {
	c    chan struct{}
	once sync.Once
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.once.Do(func() { close(f.c) })
	return len(p), nil
}

// dropProxy relays TCP connections to a server until drop closes them
// all: the network between client and server failing.
type dropProxy struct {
	url   string
	mu    sync.Mutex
	conns []net.Conn
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{url: "http://" + ln.Addr().String()}
	addr := strings.TrimPrefix(target, "http://")
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); p.drop(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, b)
			p.mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(b, c); b.Close() })
			wg.Go(func() { _, _ = io.Copy(c, b); c.Close() })
		}
	})
	return p
}

func (p *dropProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestSessionLimit: beyond MaxSessions a session is refused with 429
// before any upgrade; Close ends the sessions running.
func TestSessionLimit(t *testing.T) {
	started, ended := make(chan struct{}), make(chan error, 1)
	s, cfg, pod := api(t, blockingExec(started, ended), Options{MaxSessions: 1})
	e, err := streamtest.Executors[0].New(cfg, streamtest.URL(t, pod, "exec", "c", false, false, "sleep"))
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		first <- e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
	}()
	<-started
	for _, ex := range streamtest.Executors {
		e, err := ex.New(cfg, streamtest.URL(t, pod, "exec", "c", false, false, "true"))
		if err != nil {
			t.Fatal(err)
		}
		err = e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
		if want := "too many streaming sessions"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: second session: %v, want %q", ex.Name, err, want)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Close: the Runtime's context ended with %v", err)
		}
	default:
		t.Error("Close returned with the session's Runtime call still running")
	}
	if err := <-first; err == nil {
		t.Error("the session Close ended reported success")
	}
}

// TestRouteKlog: upstream's klog errors (a normal close) come out at
// debug level, and not at all from a logger at info level.
func TestRouteKlog(t *testing.T) {
	klog.Background().Error(errors.New("use of closed network connection"), "Error on socket receive", "test", t.Name())
	want := `level=DEBUG msg="Error on socket receive" err="use of closed network connection" test=TestRouteKlog`
	if got := klogOut.String(); !strings.Contains(got, want) {
		t.Errorf("klog's output %q lacks %q", got, want)
	}
	var buf bytes.Buffer
	log := slog.New(debugHandler{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})})
	log.Error("noise")
	if buf.Len() != 0 {
		t.Errorf("at info level klog errors show: %q", buf.String())
	}
}
