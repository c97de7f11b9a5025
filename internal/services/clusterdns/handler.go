package clusterdns

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
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
// pods' addresses (A) or its named port's targets (SRV, their addresses
// as additional records), in a random order (a client takes the first);
// no data for another type, NXDOMAIN for a name that is not there.
func (s *Server) answer(r *dns.Msg, name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg).SetReply(r)
	m.Authoritative = true
	t := s.table.Load()
	ips, ok := t.Lookup(name)
	srvs := t.SRV(name)
	if !ok && len(srvs) == 0 {
		m.Rcode = dns.RcodeNameError
		m.Ns = []dns.RR{s.soa()}
		return m
	}
	qname := r.Question[0].Name
	if qtype == dns.TypeA || qtype == dns.TypeANY {
		for _, i := range rand.Perm(len(ips)) {
			m.Answer = append(m.Answer, aRecord(qname, ips[i]))
		}
	}
	if qtype == dns.TypeSRV || qtype == dns.TypeANY {
		for _, i := range rand.Perm(len(srvs)) {
			srv := srvs[i]
			m.Answer = append(m.Answer, &dns.SRV{Hdr: dns.RR_Header{Name: qname, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: TTL},
				Priority: 0, Weight: uint16(100 / len(srvs)), Port: srv.Port, Target: srv.Target})
			if addrs, _ := t.Lookup(srv.Target); len(addrs) > 0 {
				m.Extra = append(m.Extra, aRecord(srv.Target, addrs[0]))
			}
		}
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{s.soa()}
	}
	return m
}

func aRecord(name string, ip netip.Addr) dns.RR {
	return &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: TTL}, A: ip.AsSlice()}
}

// soa is the cluster zone's SOA, for negative answers (their TTL).
func (s *Server) soa() dns.RR {
	return &dns.SOA{Hdr: dns.RR_Header{Name: s.zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: TTL},
		Ns: "ns.dns." + s.zone, Mbox: "hostmaster." + s.zone, Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: TTL}
}

// forwardQuery asks the host's resolvers, in order, over the client's
// transport; SERVFAIL when none answers or too many queries are in flight.
func (s *Server) forwardQuery(w dns.ResponseWriter, r *dns.Msg) *dns.Msg {
	client := remoteIP(w.RemoteAddr())
	if !s.takeForward(client) {
		return new(dns.Msg).SetRcode(r, dns.RcodeServerFailure)
	}
	defer s.releaseForward(client)
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

// takeForward takes a slot for a forwarded query of client: false when
// all are taken or client holds its share.
func (s *Server) takeForward(client netip.Addr) bool {
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	if s.fwdBy[client] >= maxForwardsPerClient {
		return false
	}
	select {
	case s.forward <- struct{}{}:
	default:
		return false
	}
	s.fwdBy[client]++
	return true
}

func (s *Server) releaseForward(client netip.Addr) {
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	<-s.forward
	if s.fwdBy[client]--; s.fwdBy[client] <= 0 {
		delete(s.fwdBy, client)
	}
}

// remoteIP is a UDP or TCP peer's address (unmapped); the zero Addr else.
func remoteIP(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}
