package prober

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podhost/podhost/internal/kubelet/handler"
)

type fakeExec struct {
	cmd    []string
	id     string
	code   int
	stdout string
	stderr string
	block  bool
	err    error
}

func (f *fakeExec) Exec(ctx context.Context, id string, cmd []string, _ io.Reader, stdout, stderr io.Writer, _ bool) (int, error) {
	f.cmd, f.id = cmd, id
	if f.block {
		<-ctx.Done()
		return -1, ctx.Err()
	}
	_, _ = io.WriteString(stdout, f.stdout)
	_, _ = io.WriteString(stderr, f.stderr)
	return f.code, f.err
}

func execReq(cmd ...string) request {
	c := &corev1.Container{Name: "app", Env: []corev1.EnvVar{
		{Name: "FILE", Value: "/tmp/ready"},
		{Name: "FROM", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	}}
	p := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}, TimeoutSeconds: 1}
	return request{pod: &corev1.Pod{}, container: c, containerID: "c1", probe: p}
}

func TestExecProbe(t *testing.T) {
	fe := &fakeExec{stdout: "out ", stderr: "err"}
	h := &handlers{exec: fe}
	out, output, err := h.run(context.Background(), execReq("test", "-f", "$(FILE)", "$(FROM)", "$(NONE)"))
	if err != nil || out != outcomeSuccess || output != "out err" {
		t.Fatalf("got %v %q %v", out, output, err)
	}
	if fe.id != "c1" || strings.Join(fe.cmd, " ") != "test -f /tmp/ready  $(NONE)" {
		t.Fatalf("exec %s %q", fe.id, fe.cmd)
	}
	fe.code = 1
	if out, output, _ := h.run(context.Background(), execReq("false")); out != outcomeFailure || output != "out err" {
		t.Fatalf("exit 1: %v %q", out, output)
	}
	fe.err = fmt.Errorf("container gone")
	if out, _, err := h.run(context.Background(), execReq("false")); out != outcomeUnknown || err == nil {
		t.Fatalf("exec error: %v %v", out, err)
	}
}

func TestExecProbeTimeout(t *testing.T) {
	h := &handlers{exec: &fakeExec{block: true}}
	out, output, err := h.run(context.Background(), execReq("sleep", "10"))
	if err != nil || out != outcomeFailure || output != `command "sleep 10" timed out` {
		t.Fatalf("got %v %q %v", out, output, err)
	}
}

// httpReq probes u's host and port with path and headers.
func httpReq(t *testing.T, u string, path string, scheme corev1.URIScheme, hdrs ...corev1.HTTPHeader) request {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(pu.Port())
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	p := &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
		Path: path, Port: intstr.FromString("http"), Scheme: scheme, HTTPHeaders: hdrs,
	}}}
	return request{pod: &corev1.Pod{}, container: c, podIP: pu.Hostname(), probe: p}
}

func TestHTTPProbe(t *testing.T) {
	var got http.Header
	var host string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		got, host = r.Header.Clone(), r.Host
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/bad", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "secret body", 500) })
	mux.HandleFunc("/local", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/ok", http.StatusFound)
	})
	h := &handlers{transport: handler.NewProbeTransport()}
	ctx := context.Background()

	out, body, err := h.run(ctx, httpReq(t, srv.URL, "/ok?x=1", corev1.URISchemeHTTP,
		corev1.HTTPHeader{Name: "X-Custom", Value: "v"}, corev1.HTTPHeader{Name: "Host", Value: "example.test"}))
	if err != nil || out != outcomeSuccess || body != "fine" {
		t.Fatalf("/ok: %v %q %v", out, body, err)
	}
	if got.Get("User-Agent") != UserAgent || got.Get("Accept") != "*/*" || got.Get("X-Custom") != "v" || host != "example.test" {
		t.Fatalf("headers %v host %q", got, host)
	}
	_, _, _ = h.run(ctx, httpReq(t, srv.URL, "/ok", "", corev1.HTTPHeader{Name: "Accept", Value: ""},
		corev1.HTTPHeader{Name: "User-Agent", Value: "mine"}))
	if _, has := got["Accept"]; has || got.Get("User-Agent") != "mine" {
		t.Fatalf("empty Accept must be dropped, User-Agent kept: %v", got)
	}
	if out, msg, _ := h.run(ctx, httpReq(t, srv.URL, "/bad", "")); out != outcomeFailure || msg != "HTTP probe failed with statuscode: 500" {
		t.Fatalf("/bad: %v %q", out, msg)
	}
	if out, body, _ := h.run(ctx, httpReq(t, srv.URL, "/local", "")); out != outcomeSuccess || body != "fine" {
		t.Fatalf("same-host redirect not followed: %v %q", out, body)
	}
	if out, msg, _ := h.run(ctx, httpReq(t, srv.URL, "/away", "")); out != outcomeWarning || !strings.HasPrefix(msg, "Probe terminated redirects") {
		t.Fatalf("other-host redirect: %v %q", out, msg)
	}
}

// An HTTPS probe skips certificate checks and speaks HTTP/2 when the
// server offers it (the kubelet's prober transport has HTTP/2 configured).
func TestHTTPSProbeSkipsVerifyAndUsesHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Proto) }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	h := &handlers{transport: handler.NewProbeTransport()}
	if out, body, err := h.run(context.Background(), httpReq(t, srv.URL, "/", corev1.URISchemeHTTPS)); out != outcomeSuccess || body != "HTTP/2.0" {
		t.Fatalf("https: %v %q %v; want success over HTTP/2.0", out, body, err)
	}
}

// The Manager probes with the probes' transport (HTTP/2 offered).
func TestManagerUsesProbeTransport(t *testing.T) {
	m := New(Options{})
	defer m.Close()
	if h, ok := m.runner.(*handlers); !ok || !h.transport.ForceAttemptHTTP2 {
		t.Fatalf("runner %T: not the probe transport", m.runner)
	}
}

func TestHTTPProbeConnectionRefused(t *testing.T) {
	addr := closedPort(t)
	h := &handlers{transport: handler.NewProbeTransport()}
	out, msg, err := h.run(context.Background(), httpReq(t, "http://"+addr, "/", ""))
	if err != nil || out != outcomeFailure || !strings.Contains(msg, "connection refused") {
		t.Fatalf("got %v %q %v", out, msg, err)
	}
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func tcpReq(addr string) request {
	host, port, _ := net.SplitHostPort(addr)
	p := &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(port)}}}
	return request{pod: &corev1.Pod{}, container: &corev1.Container{Name: "app"}, podIP: host, probe: p}
}

func TestTCPProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h := &handlers{}
	if out, _, err := h.run(context.Background(), tcpReq(l.Addr().String())); out != outcomeSuccess || err != nil {
		t.Fatalf("open port: %v %v", out, err)
	}
	if out, msg, _ := h.run(context.Background(), tcpReq(closedPort(t))); out != outcomeFailure || !strings.Contains(msg, "refused") {
		t.Fatalf("closed port: %v %q", out, msg)
	}
}

func grpcReq(addr, service string) request {
	host, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	g := &corev1.GRPCAction{Port: int32(n)}
	if service != "" {
		g.Service = &service
	}
	p := &corev1.Probe{TimeoutSeconds: 1, ProbeHandler: corev1.ProbeHandler{GRPC: g}}
	return request{pod: &corev1.Pod{}, container: &corev1.Container{Name: "app"}, podIP: host, probe: p}
}

func serveGRPC(t *testing.T, withHealth bool) (string, *health.Server) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	hs := health.NewServer()
	if withHealth {
		healthpb.RegisterHealthServer(s, hs)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().String(), hs
}

func TestGRPCProbe(t *testing.T) {
	addr, hs := serveGRPC(t, true)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	h := &handlers{}
	ctx := context.Background()
	if out, msg, err := h.run(ctx, grpcReq(addr, "")); out != outcomeSuccess || msg != "service healthy" || err != nil {
		t.Fatalf("overall health: %v %q %v", out, msg, err)
	}
	if out, msg, _ := h.run(ctx, grpcReq(addr, "db")); out != outcomeFailure || msg != `service unhealthy (responded with "NOT_SERVING")` {
		t.Fatalf("db: %v %q", out, msg)
	}
	plain, _ := serveGRPC(t, false)
	if out, msg, _ := h.run(ctx, grpcReq(plain, "")); out != outcomeFailure ||
		!strings.HasPrefix(msg, "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ") {
		t.Fatalf("no health service: %v %q", out, msg)
	}
	// Nothing listens: the kubelet (grpc.WithBlock) keeps connecting until
	// the probe's timeout (1 s here).
	closed := closedPort(t)
	if out, msg, _ := h.run(ctx, grpcReq(closed, "")); out != outcomeFailure ||
		msg != fmt.Sprintf("timeout: failed to connect service %q within 1s: context deadline exceeded", closed) {
		t.Fatalf("closed port: %v %q", out, msg)
	}
}

func TestProbeHost(t *testing.T) {
	hostNet := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true}}
	if h, _ := probeHost("", request{pod: hostNet}); h != "127.0.0.1" {
		t.Errorf("hostNetwork without host IP: %q", h)
	}
	if _, err := probeHost("", request{pod: &corev1.Pod{}}); err == nil {
		t.Error("pod without IP must error")
	}
	if h, _ := probeHost("db.local", request{podIP: "10.0.0.1"}); h != "db.local" {
		t.Errorf("explicit host: %q", h)
	}
}
