package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// loopHost is the loopback server's name in the URLs the proxies dial.
const loopHost = "podhost-stream.invalid"

// loopback is the in-process "CRI streaming server": an http.Server on a
// listener of net.Pipe connections that only transport dials, serving each
// registered session by the token in its path (handlers.go).
type loopback struct {
	s         *Server
	ln        *pipeListener
	srv       *http.Server
	transport *http.Transport

	ctx    context.Context // ends at close: every session's
	cancel context.CancelFunc
	served chan struct{} // closed when srv.Serve returned

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session
	running  sync.WaitGroup // sessions registered, loopback handlers running
}

type connKey struct{}

func newLoopback(s *Server) *loopback {
	l := &loopback{s: s, ln: newPipeListener(), served: make(chan struct{}), sessions: map[string]*session{}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.transport = &http.Transport{DialContext: l.ln.dial, DisableKeepAlives: true, DisableCompression: true}
	mux := http.NewServeMux()
	mux.HandleFunc("/"+kindExec+"/{token}", l.exec)
	mux.HandleFunc("/"+kindAttach+"/{token}", l.attach)
	mux.HandleFunc("/"+kindPortForward+"/{token}", l.portForward)
	l.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return l.ctx },
		// portForward closes its connection when the session ends: upstream
		// closes it only when the client does.
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
	}
	go func() {
		defer close(l.served)
		_ = l.srv.Serve(l.ln)
	}()
	return l
}

// register makes a session reachable until unregister, and cancel called
// when the loopback closes; false once closed.
func (l *loopback) register(sess *session, cancel context.CancelFunc) (string, bool) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return "", false
	}
	l.sessions[token] = sess
	l.running.Add(1)
	stop := context.AfterFunc(l.ctx, cancel)
	sess.stop = stop
	return token, true
}

func (l *loopback) unregister(token string) {
	l.mu.Lock()
	sess := l.sessions[token]
	delete(l.sessions, token)
	l.mu.Unlock()
	if sess != nil {
		sess.stop()
		l.running.Done()
	}
}

// lookup finds a registered session for a loopback handler, which calls
// done when it returns: close waits for the handlers too (the API side of
// a session can end first).
func (l *loopback) lookup(token string) (sess *session, done func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sess = l.sessions[token]
	if sess == nil {
		return nil, nil
	}
	l.running.Add(1) // the session's own count holds the group above zero
	return sess, l.running.Done
}

// close cancels every session, waits for them to end and stops the
// server.
func (l *loopback) close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	l.running.Wait()
	err := l.srv.Close()
	<-l.served
	l.transport.CloseIdleConnections()
	return err
}

// pipeListener hands the server the far ends of the pipes dial makes.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		err := net.ErrClosed
		client.Close()
		server.Close()
		return nil, err
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return loopHost }
