package api

import (
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Limits bound what clients can hold of an HTTP server of the daemon (the
// API socket, the metrics listener): without them every idle keep-alive
// connection kept a goroutine and its buffers for ever (3000 idle
// connections: 3000 goroutines, +57 MB). Long-lived streams (logs -f,
// watches) are responses being written, not idle connections, and exec
// leaves the server's accounting when it takes over its connection, so
// none of these timeouts ends them; no read or write timeout is set for
// that reason.
type Limits struct {
	// ReadHeaderTimeout: a request's headers must arrive within it (a
	// connection that never sends one is closed then).
	ReadHeaderTimeout time.Duration
	// IdleTimeout: a keep-alive connection with no request for that long
	// is closed.
	IdleTimeout time.Duration
	// MaxConns: connections served at once; the next ones wait in the
	// listen backlog until one closes (netutil.LimitListener).
	MaxConns int
	// MaxHeaderBytes: the most a request's headers may take.
	MaxHeaderBytes int
}

// DefaultLimits are the daemon's.
var DefaultLimits = Limits{ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute, MaxConns: 256, MaxHeaderBytes: 128 << 10}

// Apply sets srv's timeouts and header limit and returns l capped at
// MaxConns connections, to serve srv on.
func (lim Limits) Apply(srv *http.Server, l net.Listener) net.Listener {
	srv.ReadHeaderTimeout = lim.ReadHeaderTimeout
	srv.IdleTimeout = lim.IdleTimeout
	srv.MaxHeaderBytes = lim.MaxHeaderBytes
	if lim.MaxConns > 0 {
		l = netutil.LimitListener(l, lim.MaxConns)
	}
	return l
}
