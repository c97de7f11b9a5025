package clusterdns

import (
	"context"
	"math/rand/v2"
	"net"
	"strings"

	"github.com/miekg/dns"
)

// ServeDNS answers one query: the cluster domain from the table, anything
// else through the host's resolvers.
func (s *Server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	if _, tcp := w.RemoteAddr().(*net.TCPAddr); tcp && !s.allowed(w.RemoteAddr()) {
		return // TCP queries count against the client's rate too (UDP ones are dropped before)
	}
	if r.Opcode != dns.OpcodeQuery || len(r.Question) != 1 {
		s.reply(w, r, new(dns.Msg).SetRcode(r, dns.RcodeNotImplemented))
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	if q.Qclass == dns.ClassINET && dns.IsSubDomain(s.zone, name) {
		s.reply(w, r, s.answer(r, name, q.Qtype))
		return
	}
	s.reply(w, r, s.forwardQuery(w, r))
}

// answer is the authoritative answer for a name of the cluster domain: its
// pods' addresses in a random order (a client takes the first), no data
// for another type, NXDOMAIN for a name that is not there.
func (s *Server) answer(r *dns.Msg, name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg).SetReply(r)
	m.Authoritative = true
	ips, ok := s.table.Load().Lookup(name)
	if !ok {
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{s.soa()}
		return m
	}
	if qtype != dns.TypeA && qtype != dns.TypeANY {
		m.Ns = []dns.RR{s.soa()}
		return m
	}
	order := rand.Perm(len(ips))
	for _, i := range order {
		m.Answer = append(m.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: TTL},
			A:   ips[i].AsSlice(),
		})
	}
	return m
}

// soa is the cluster zone's SOA, for negative answers (their TTL).
func (s *Server) soa() dns.RR {
	return &dns.SOA{Hdr: dns.RR_Header{Name: s.zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: TTL},
		Ns: "ns.dns." + s.zone, Mbox: "hostmaster." + s.zone, Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: TTL}
}

// forwardQuery asks the host's resolvers, in order, over the client's
// transport; SERVFAIL when none answers or too many queries are in flight.
func (s *Server) forwardQuery(w dns.ResponseWriter, r *dns.Msg) *dns.Msg {
	select {
	case s.forward <- struct{}{}:
		defer func() { <-s.forward }()
	default:
		return new(dns.Msg).SetRcode(r, dns.RcodeServerFailure)
	}
	network := "udp"
	if _, tcp := w.RemoteAddr().(*net.TCPAddr); tcp {
		network = "tcp"
	}
	c := *s.client
	c.Net = network
	ctx, cancel := context.WithTimeout(context.Background(), 2*DefaultForwardTimeout)
	defer cancel()
	for _, up := range s.cfg.Upstreams {
		resp, _, err := c.ExchangeContext(ctx, r, up)
		if err == nil && resp != nil {
			return resp
		}
		s.log.Debug("cluster DNS: upstream failed", "upstream", up, "err", err)
	}
	return new(dns.Msg).SetRcode(r, dns.RcodeServerFailure)
}

// reply writes m, cut to what the client can take over UDP (the
// truncated bit tells it to ask again over TCP).
func (s *Server) reply(w dns.ResponseWriter, r, m *dns.Msg) {
	m.Id = r.Id
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if o := r.IsEdns0(); o != nil {
			size = min(max(int(o.UDPSize()), dns.MinMsgSize), maxUDPSize)
		}
		m.Truncate(size)
	}
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("cluster DNS: reply", "client", w.RemoteAddr(), "err", err)
	}
}
