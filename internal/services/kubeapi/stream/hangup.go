package stream

import (
	"bufio"
	"net"
	"net/http"
	"sync"
)

// hangupWriter is the API connection's ResponseWriter for a session: once
// a handler hijacks the connection, net/http no longer watches it and the
// request's context would outlive the client, so hangup is called when a
// read from the hijacked connection fails (the client went away, or the
// connection was closed). The WebSocket translator needs it: it reads the
// client through the bufio.Reader Hijack returns, so that one reads
// through the watch too.
type hangupWriter struct {
	http.ResponseWriter
	hangup func()
}

func (h *hangupWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	hc := &hangupConn{Conn: c, buffered: rw.Reader, hangup: h.hangup}
	return hc, bufio.NewReadWriter(bufio.NewReader(hc), rw.Writer), nil
}

// Unwrap serves http.ResponseController.
func (h *hangupWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// hangupConn reads through the hijacked connection's bufio.Reader (bytes
// net/http read ahead come first) and calls hangup, once, on the first
// read error or on Close.
type hangupConn struct {
	net.Conn
	buffered *bufio.Reader
	hangup   func()
	once     sync.Once
}

func (c *hangupConn) Read(p []byte) (int, error) {
	n, err := c.buffered.Read(p)
	if err != nil {
		c.once.Do(c.hangup)
	}
	return n, err
}

func (c *hangupConn) Close() error {
	c.once.Do(c.hangup)
	return c.Conn.Close()
}
