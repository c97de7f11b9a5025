package handler

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolvePort(t *testing.T) {
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
	for _, tc := range []struct {
		in   intstr.IntOrString
		want int
		err  bool
	}{
		{intstr.FromInt32(80), 80, false}, {intstr.FromString("web"), 8080, false},
		{intstr.FromString("9090"), 9090, false}, {intstr.FromString("nope"), -1, true}, {intstr.FromInt32(0), 0, true},
	} {
		got, err := ResolvePort(tc.in, c)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ResolvePort(%v) = %d, %v", tc.in, got, err)
		}
	}
}

func TestNewHTTPGetRequest(t *testing.T) {
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
	g := &corev1.HTTPGetAction{Path: "/x?y=1", Port: intstr.FromString("web"), Scheme: corev1.URISchemeHTTPS,
		HTTPHeaders: []corev1.HTTPHeader{{Name: "Host", Value: "h.test"}, {Name: "X-A", Value: "b"}}}
	req, err := NewHTTPGetRequest(context.Background(), g, c, "10.0.0.1", "kube-lifecycle/1.37")
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "https://10.0.0.1:8080/x?y=1" || req.Host != "h.test" ||
		req.Header.Get("User-Agent") != "kube-lifecycle/1.37" || req.Header.Get("X-A") != "b" || req.Header.Get("Accept") != "*/*" {
		t.Fatalf("request %s host %q headers %v", req.URL, req.Host, req.Header)
	}
}

// The probes' transport speaks HTTP/2 to a TLS server that offers it (the
// kubelet's prober); the hooks' stays on HTTP/1.1 (the kubelet's
// lifecycle client). Neither checks the certificate.
func TestTransportProtocols(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.Proto) }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for _, tc := range []struct {
		name string
		tr   *http.Transport
		want string
	}{
		{"probe", NewProbeTransport(), "HTTP/2.0"},
		{"hook", NewTransport(), "HTTP/1.1"},
	} {
		res, err := (&http.Client{Transport: tc.tr}).Get(srv.URL)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if string(b) != tc.want {
			t.Errorf("%s transport: %s, want %s", tc.name, b, tc.want)
		}
	}
}
