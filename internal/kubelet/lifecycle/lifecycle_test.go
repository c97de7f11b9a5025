package lifecycle

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
)

type fakeExec struct {
	code int
	out  string
	err  error
	got  []string
	id   string
}

func (f *fakeExec) Exec(_ context.Context, id string, cmd []string, _ io.Reader, stdout, _ io.Writer, _ bool) (int, error) {
	f.got, f.id = cmd, id
	_, _ = io.WriteString(stdout, f.out)
	return f.code, f.err
}

func target() Target {
	return Target{ContainerID: "cid", Pod: "web_default(uid-1)", Host: "127.0.0.1",
		Container: &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 1}}}}
}

func TestExecHook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		exec    *fakeExec
		wantMsg string
	}{
		{"success", &fakeExec{}, ""},
		{"non-zero exit", &fakeExec{code: 3, out: "boom"},
			`Exec lifecycle hook ([sh -c x]) for Container "app" in Pod "web_default(uid-1)" failed - error: command 'sh -c x' exited with 3: boom, message: "boom"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRunner(tc.exec, nil)
			msg, err := r.Run(context.Background(), target(), &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "x"}}})
			if msg != tc.wantMsg || (err != nil) != (tc.wantMsg != "") {
				t.Fatalf("Run = %q, %v; want %q", msg, err, tc.wantMsg)
			}
			if tc.exec.id != "cid" || strings.Join(tc.exec.got, " ") != "sh -c x" {
				t.Fatalf("exec'd %q in %q", tc.exec.got, tc.exec.id)
			}
		})
	}
	if _, err := NewRunner(nil, nil).Run(context.Background(), target(), &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}); err == nil {
		t.Fatal("exec hook without an Execer must fail")
	}
}

// httpHandler returns a hook to srv's path, by named port.
func httpHook(t *testing.T, srvURL, path string, scheme corev1.URIScheme) (Target, *corev1.LifecycleHandler) {
	t.Helper()
	u, _ := url.Parse(srvURL)
	host, port, _ := net.SplitHostPort(u.Host)
	p, _ := strconv.Atoi(port)
	tg := target()
	tg.Host = host
	tg.Container.Ports[0].ContainerPort = int32(p)
	return tg, &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("web"), Scheme: scheme,
		HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Hook", Value: "stop"}}}}
}

func TestHTTPHook(t *testing.T) {
	got := make(chan *http.Request, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	r := NewRunner(nil, nil)
	tg, h := httpHook(t, srv.URL, "/quit", corev1.URISchemeHTTP)
	// Any answer succeeds, even a 500 (the kubelet does not read the status).
	if msg, err := r.Run(context.Background(), tg, h); err != nil {
		t.Fatalf("Run = %q, %v", msg, err)
	}
	req := <-got
	if req.URL.Path != "/quit" || req.Header.Get("X-Hook") != "stop" || req.Header.Get("User-Agent") != UserAgent {
		t.Fatalf("request %s %v", req.URL, req.Header)
	}
	// HTTPS answered in plain HTTP: sent again over HTTP.
	tg, h = httpHook(t, srv.URL, "/tls", corev1.URISchemeHTTPS)
	if msg, err := r.Run(context.Background(), tg, h); err != nil {
		t.Fatalf("https fallback: %q, %v", msg, err)
	}
	if req := <-got; req.URL.Path != "/tls" {
		t.Fatalf("fallback request %s", req.URL)
	}
	// Nothing listening: fails with the kubelet's message.
	srv.Close()
	msg, err := r.Run(context.Background(), tg, &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/x", Port: intstr.FromString("web")}})
	if err == nil || !strings.HasPrefix(msg, `HTTP lifecycle hook (/x) for Container "app" in Pod "web_default(uid-1)" failed - error: `) {
		t.Fatalf("closed port: %q, %v", msg, err)
	}
}

func TestHTTPSHookSkipsVerify(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	tg, h := httpHook(t, srv.URL, "/", corev1.URISchemeHTTPS)
	if msg, err := NewRunner(nil, nil).Run(context.Background(), tg, h); err != nil {
		t.Fatalf("Run = %q, %v", msg, err)
	}
}

func TestSleepHook(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	r := NewRunner(nil, clk)
	h := &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}
	done := make(chan error, 1)
	go func() { _, err := r.Run(context.Background(), target(), h); done <- err }()
	waitWaiter(t, clk)
	clk.Step(4 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("sleep ended after 4 of 5 s: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	clk.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatalf("sleep: %v", err)
	}
	// Cut off: ctx ends first.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, err := r.Run(ctx, target(), h); done <- err }()
	waitWaiter(t, clk)
	cancel()
	if err := <-done; err == nil || err.Error() != "container terminated before sleep hook finished" {
		t.Fatalf("cut-off sleep: %v", err)
	}
}

func TestInvalidHandler(t *testing.T) {
	msg, err := NewRunner(nil, nil).Run(context.Background(), target(), &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{}})
	if err == nil || !strings.HasPrefix(msg, "Cannot run handler: invalid handler") {
		t.Fatalf("Run = %q, %v", msg, err)
	}
}

func waitWaiter(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("no timer armed")
		}
		time.Sleep(time.Millisecond)
	}
}
