package clusterdns

import (
	"net/netip"
	"sync"

	"golang.org/x/time/rate"
)

// maxClients bounds the limiter's memory: when more clients have asked
// since the last reset, every bucket starts full again.
const maxClients = 4096

// limiter is a token bucket per client address.
type limiter struct {
	mu      sync.Mutex
	rate    rate.Limit
	burst   int
	clients map[netip.Addr]*rate.Limiter
}

func newLimiter(r float64, burst int) *limiter {
	return &limiter{rate: rate.Limit(r), burst: burst, clients: map[netip.Addr]*rate.Limiter{}}
}

func (l *limiter) allow(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clients[ip]
	if c == nil {
		if len(l.clients) >= maxClients {
			clear(l.clients)
		}
		c = rate.NewLimiter(l.rate, l.burst)
		l.clients[ip] = c
	}
	return c.Allow()
}
