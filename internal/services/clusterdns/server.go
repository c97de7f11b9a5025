// Package clusterdns is the node's DNS server for its pods: it answers the
// names of the manifests' Services in the cluster domain
// (NAME.NAMESPACE.svc.<clusterDomain>, and HOSTNAME.NAME.NAMESPACE.svc.… of
// a pod whose subdomain is the Service) with the selected pods' IPs, as a
// cluster's DNS answers a headless Service, and forwards every other name
// to the host's resolvers. It listens on the pod network's gateway address
// only and answers only clients of the pod subnet, each within a query
// rate; forwarded queries are bounded in number and time. The wire format
// is github.com/miekg/dns's.
package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/netutil"
	"golang.org/x/sys/unix"
)

// Defaults of Config's limits.
const (
	DefaultRate        = 100 // queries per second per client
	DefaultBurst       = 200
	DefaultMaxForwards = 64 // forwarded queries in flight, all clients
	// maxForwardsPerClient bounds one client's share of them: a pod asking
	// for names whose servers never answer holds at most this many slots
	// for DefaultForwardTimeout, and the other pods still resolve.
	maxForwardsPerClient  = 8
	DefaultForwardTimeout = 2 * time.Second
	DefaultMaxTCPConns    = 32
	// TTL of the cluster names' answers, in seconds (CoreDNS's kubernetes
	// plugin's default is 5).
	TTL = 5
	// maxUDPSize is the largest UDP message read or answered (EDNS0).
	maxUDPSize = 1232
)

// Config configures a Server.
type Config struct {
	Addr          netip.Addr   // the pod network's gateway address
	Port          int          // 0 = 53
	Subnet        netip.Prefix // the pod network: the only clients answered
	ClusterDomain string       // e.g. cluster.local
	Upstreams     []string     // host:port of the host's resolvers, tried in order
	Rate          float64      // queries per second per client (0: DefaultRate)
	Burst         int          // (0: DefaultBurst)
	MaxForwards   int          // (0: DefaultMaxForwards)
	Logger        *slog.Logger
}

// Server is the pods' DNS server. SetTable installs the names it answers.
type Server struct {
	cfg     Config
	zone    string // the cluster domain as a lower-case FQDN ("cluster.local.")
	table   atomic.Pointer[Table]
	limits  *limiter
	forward chan struct{} // semaphore of forwarded queries
	fwdMu   sync.Mutex
	fwdBy   map[netip.Addr]int // forwarded queries in flight per client (entries > 0 only)
	client  *dns.Client
	log     *slog.Logger
}

// New returns a Server for cfg, filling defaults.
func New(cfg Config) *Server {
	if cfg.Port == 0 {
		cfg.Port = 53
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	if cfg.MaxForwards <= 0 {
		cfg.MaxForwards = DefaultMaxForwards
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, zone: dns.CanonicalName(cfg.ClusterDomain), limits: newLimiter(cfg.Rate, cfg.Burst),
		forward: make(chan struct{}, cfg.MaxForwards), fwdBy: map[netip.Addr]int{}, log: cfg.Logger,
		client: &dns.Client{Timeout: DefaultForwardTimeout, UDPSize: maxUDPSize}}
	s.table.Store(&Table{})
	return s
}

// SetTable installs the names the server answers in the cluster domain.
func (s *Server) SetTable(t *Table) { s.table.Store(t) }

// Run serves UDP and TCP on the gateway address until ctx ends (Listen,
// then Serve).
func (s *Server) Run(ctx context.Context) error {
	pc, ln, err := s.Listen(ctx)
	if err != nil {
		return err
	}
	return s.Serve(ctx, pc, ln)
}

// Listen binds UDP and TCP port Config.Port of the gateway address, with
// IP_FREEBIND: the address exists once the pod network's bridge has it
// (its first pod).
func (s *Server) Listen(ctx context.Context) (net.PacketConn, net.Listener, error) {
	addr := net.JoinHostPort(s.cfg.Addr.String(), strconv.Itoa(s.cfg.Port))
	lc := net.ListenConfig{Control: freebind}
	pc, err := lc.ListenPacket(ctx, "udp4", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster DNS: listen udp %s: %w", addr, err)
	}
	ln, err := lc.Listen(ctx, "tcp4", addr)
	if err != nil {
		pc.Close()
		return nil, nil, fmt.Errorf("cluster DNS: listen tcp %s: %w", addr, err)
	}
	s.log.Info("cluster DNS listening", "addr", addr, "zone", s.zone, "upstreams", s.cfg.Upstreams)
	return pc, ln, nil
}

// Serve answers on pc and ln (closed when it returns) until ctx ends.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
	udp := &dns.Server{PacketConn: &filterConn{PacketConn: pc, s: s}, Handler: s, UDPSize: maxUDPSize}
	tcp := &dns.Server{Listener: &filterListener{Listener: netutil.LimitListener(ln, DefaultMaxTCPConns), s: s}, Handler: s,
		MaxTCPQueries: 128, IdleTimeout: func() time.Duration { return 8 * time.Second }}
	started := make(chan struct{}, 2)
	for _, srv := range []*dns.Server{udp, tcp} {
		srv.NotifyStartedFunc = func() { started <- struct{}{} }
	}
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for _, srv := range []*dns.Server{udp, tcp} {
		wg.Go(func() { errs <- srv.ActivateAndServe() })
	}
	var err error
	for range 2 { // Shutdown of a server not yet started is an error
		select {
		case <-started:
		case err = <-errs:
		}
	}
	if err == nil {
		select {
		case <-ctx.Done():
		case err = <-errs:
		}
	}
	udp.Shutdown() //nolint:errcheck // closing: nothing to do about it
	tcp.Shutdown() //nolint:errcheck
	pc.Close()
	ln.Close()
	wg.Wait()
	if err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	return nil
}

func freebind(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_FREEBIND, 1)
	})
	return errors.Join(err, serr)
}

// allowed is whether a query from addr is answered: a client of the pod
// subnet within its rate.
func (s *Server) allowed(addr net.Addr) bool {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	return s.cfg.Subnet.Contains(ip) && s.limits.allow(ip)
}

// filterConn drops, before the server reads them, UDP queries from outside
// the pod subnet or over their client's rate: no answer, no goroutine.
type filterConn struct {
	net.PacketConn
	s *Server
}

func (c *filterConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(b)
		if err != nil || c.s.allowed(addr) {
			return n, addr, err
		}
	}
}

// filterListener closes TCP connections from outside the pod subnet.
type filterListener struct {
	net.Listener
	s *Server
}

func (l *filterListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, perr := netip.ParseAddrPort(conn.RemoteAddr().String())
		if perr == nil && l.s.cfg.Subnet.Contains(ap.Addr().Unmap()) {
			return conn, nil
		}
		conn.Close()
	}
}
