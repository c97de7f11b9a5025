package clusterdns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serve starts a Server on loopback listeners of its own and returns its address.
func serve(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, pc, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, pc.LocalAddr().String()
}

// upstream is a fake host resolver answering every A query with 192.0.2.7.
func upstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg).SetReply(r)
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
			A: net.IPv4(192, 0, 2, 7)})
		w.WriteMsg(m) //nolint:errcheck
	})}
	go srv.ActivateAndServe()            //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown() }) //nolint:errcheck
	return pc.LocalAddr().String()
}

func query(t *testing.T, addr, network, name string) (*dns.Msg, error) {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	m, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), addr)
	return m, err
}

func answers(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out
}

func pod(name, ip string, ready bool, lbls map[string]string) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: lbls},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func TestServerAnswersClusterNamesAndForwards(t *testing.T) {
	s, addr := serve(t, Config{Subnet: netip.MustParsePrefix("127.0.0.0/8"), ClusterDomain: "cluster.local", Upstreams: []string{upstream(t)}})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: "TCP"}}}}
	s.SetTable(BuildTable([]*corev1.Service{svc}, []*corev1.Pod{
		pod("a", "10.1.0.2", true, map[string]string{"app": "web"}),
		pod("b", "10.1.0.3", false, map[string]string{"app": "web"}),
		pod("c", "10.1.0.4", true, map[string]string{"app": "db"}),
	}, "cluster.local", nil))
	for _, network := range []string{"udp", "tcp"} {
		m, err := query(t, addr, network, "WEB.default.svc.cluster.local.")
		if err != nil {
			t.Fatal(err)
		}
		if got := answers(m); len(got) != 1 || got[0] != "10.1.0.2" || !m.Authoritative {
			t.Errorf("%s: web = %v (authoritative %v), want [10.1.0.2]", network, got, m.Authoritative)
		}
	}
	c := &dns.Client{Timeout: 2 * time.Second}
	m, _, err := c.Exchange(new(dns.Msg).SetQuestion("_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV), addr)
	if err != nil || len(m.Answer) != 1 || m.Answer[0].(*dns.SRV).Target != "10-1-0-2.web.default.svc.cluster.local." || len(m.Extra) != 1 {
		t.Errorf("SRV: %v %v", m, err)
	}
	if m, err := query(t, addr, "udp", "10-1-0-2.web.default.svc.cluster.local."); err != nil || len(answers(m)) != 1 {
		t.Errorf("endpoint name: %v %v", m, err)
	}
	m, err = query(t, addr, "udp", "nope.default.svc.cluster.local.")
	if err != nil || m.Rcode != dns.RcodeNameError {
		t.Errorf("missing name: %v %v, want NXDOMAIN", m, err)
	}
	m, err = query(t, addr, "udp", "example.org.")
	if err != nil || len(answers(m)) != 1 || answers(m)[0] != "192.0.2.7" {
		t.Errorf("forwarded: %v %v", m, err)
	}
}

func TestServerIgnoresClientsOffTheSubnetAndOverRate(t *testing.T) {
	_, addr := serve(t, Config{Subnet: netip.MustParsePrefix("10.0.0.0/8"), ClusterDomain: "cluster.local"})
	if _, err := query(t, addr, "udp", "web.default.svc.cluster.local."); err == nil {
		t.Error("a client outside the pod subnet got an answer over UDP")
	}
	if _, err := query(t, addr, "tcp", "web.default.svc.cluster.local."); err == nil {
		t.Error("a client outside the pod subnet got an answer over TCP")
	}
	_, addr = serve(t, Config{Subnet: netip.MustParsePrefix("127.0.0.0/8"), ClusterDomain: "cluster.local", Rate: 0.001, Burst: 3})
	answered := 0
	for range 5 {
		c := &dns.Client{Timeout: 300 * time.Millisecond}
		if _, _, err := c.Exchange(new(dns.Msg).SetQuestion("x.default.svc.cluster.local.", dns.TypeA), addr); err == nil {
			answered++
		}
	}
	if answered != 3 {
		t.Errorf("answered %d of 5 queries with a burst of 3, want 3", answered)
	}
}

func TestBuildTable(t *testing.T) {
	named := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "db"}, PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: "TCP", TargetPort: intOrName("pg")}}}}
	withPort := pod("db-0", "10.1.0.5", false, map[string]string{"app": "db"})
	withPort.Spec.Hostname, withPort.Spec.Subdomain = "db-0", "db"
	withPort.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "pg", ContainerPort: 5432, Protocol: "TCP"}}}}
	wrongPort := pod("db-1", "10.1.0.6", true, map[string]string{"app": "db"})
	wrongPort.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "pg", ContainerPort: 5433, Protocol: "TCP"}}}}
	finished := pod("db-2", "10.1.0.7", true, map[string]string{"app": "db"})
	finished.Status.Phase = corev1.PodSucceeded
	noSelector := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default"}}
	tb := BuildTable([]*corev1.Service{named, noSelector}, []*corev1.Pod{withPort, wrongPort, finished}, "cluster.local.", nil)
	if ips, ok := tb.Lookup("db.default.svc.cluster.local."); !ok || len(ips) != 1 || ips[0].String() != "10.1.0.5" {
		t.Errorf("db = %v %v, want [10.1.0.5] (not ready but published; the wrong port and the finished pod left out)", ips, ok)
	}
	if ips, ok := tb.Lookup("db-0.db.default.svc.cluster.local."); !ok || len(ips) != 1 {
		t.Errorf("hostname record = %v %v", ips, ok)
	}
	if srvs := tb.SRV("_pg._tcp.db.default.svc.cluster.local."); len(srvs) != 1 || srvs[0] != (SRV{Target: "db-0.db.default.svc.cluster.local.", Port: 5432}) {
		t.Errorf("SRV = %v", srvs)
	}
	if ips, ok := tb.Lookup("ext.default.svc.cluster.local."); !ok || len(ips) != 0 {
		t.Errorf("selectorless = %v %v, want an existing name without addresses", ips, ok)
	}
}

func intOrName(s string) intstr.IntOrString { return intstr.FromString(s) }

func TestVIPsAndPortRules(t *testing.T) {
	cidr := netip.MustParsePrefix("10.96.0.0/16")
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: "TCP", TargetPort: intstr.FromInt32(8080)},
			{Name: "admin", Port: 81, Protocol: "TCP", TargetPort: intOrName("admin")}}}}
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, Spec: corev1.ServiceSpec{ClusterIP: "None"}}
	vips := AssignVIPs([]*corev1.Service{web, headless}, cidr)
	vip, ok := vips["default/web"]
	if len(vips) != 1 || !ok || !cidr.Contains(vip) || vip == cidr.Addr() {
		t.Fatalf("vips = %v", vips)
	}
	if again := AssignVIPs([]*corev1.Service{headless, web}, cidr); again["default/web"] != vip {
		t.Errorf("the address changed: %v, then %v", vip, again["default/web"])
	}
	a := pod("a", "10.1.0.2", true, map[string]string{"app": "web"})
	a.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "admin", ContainerPort: 9090, Protocol: "TCP"}}}}
	b := pod("b", "10.1.0.3", true, map[string]string{"app": "web"})
	rules := PortRules([]*corev1.Service{web, headless}, []*corev1.Pod{a, b, pod("c", "10.1.0.4", false, map[string]string{"app": "web"})}, vips)
	if len(rules) != 2 || rules[0].Port != 80 || fmt.Sprint(rules[0].Backends) != "[10.1.0.2:8080 10.1.0.3:8080]" ||
		rules[1].Port != 81 || fmt.Sprint(rules[1].Backends) != "[10.1.0.2:9090]" {
		t.Errorf("rules = %+v", rules)
	}
	tb := BuildTable([]*corev1.Service{web}, []*corev1.Pod{a, b}, "cluster.local", vips)
	if ips, _ := tb.Lookup("web.default.svc.cluster.local."); len(ips) != 1 || ips[0] != vip {
		t.Errorf("web = %v, want its virtual IP %v", ips, vip)
	}
	// A /30 has room for two: a third Service gets none.
	small := AssignVIPs([]*corev1.Service{web, {ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "y", Namespace: "default"}}}, netip.MustParsePrefix("10.96.0.0/30"))
	if len(small) != 2 {
		t.Errorf("a /30 gave %d addresses: %v", len(small), small)
	}
}

// TestForwardShareIsPerClient: one pod holding its share of forwarded
// queries (names whose servers never answer) leaves slots to the others.
func TestForwardShareIsPerClient(t *testing.T) {
	s := New(Config{MaxForwards: 10})
	a, b := netip.MustParseAddr("10.90.0.2"), netip.MustParseAddr("10.90.0.3")
	for i := 0; i < maxForwardsPerClient; i++ {
		if !s.takeForward(a) {
			t.Fatalf("client a refused its slot %d", i)
		}
	}
	if s.takeForward(a) {
		t.Fatal("client a got more than its share")
	}
	if !s.takeForward(b) || !s.takeForward(b) {
		t.Fatal("client b refused while a held only its share")
	}
	if s.takeForward(b) {
		t.Fatal("more than MaxForwards in flight")
	}
	s.releaseForward(a)
	if !s.takeForward(b) {
		t.Fatal("a released slot was not given to b")
	}
	for i := 0; i < maxForwardsPerClient-1; i++ {
		s.releaseForward(a)
	}
	if _, held := s.fwdBy[a]; held {
		t.Error("a client with nothing in flight is still tracked")
	}
}
