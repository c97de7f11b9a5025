// Package kubeletapi serves the kubelet API of a joined node (the
// kubelet's pkg/kubelet/server paths: containerLogs, exec, attach,
// portForward, pods, healthz, stats/summary, metrics/resource), so that
// kubectl logs, exec, attach, port-forward and top through the cluster's
// API server reach the node's pods. It runs in podhost-cluster, beside the
// daemon: requests are authenticated and authorized by the API server
// (TokenReview, SubjectAccessReview, x509 client certificates) as the
// kubelet's webhook modes do, then mapped to the daemon's own Kubernetes
// API on its unix socket and reverse-proxied there, streams (SPDY and
// WebSocket upgrades) passed through unchanged.
package kubeletapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/services/api"
)

// DefaultPort is the kubelet's port.
const DefaultPort = 10250

// requestTimeout bounds a request that is not a stream (pods, healthz,
// stats, metrics); the connection limits are the daemon's (Serve).
const requestTimeout = 30 * time.Second

// Backend is the node as the kubelet API reads it: the daemon.
type Backend interface {
	// Pods are every pod podhost runs, with status.
	Pods(ctx context.Context) ([]*corev1.Pod, error)
	// Node is the daemon's Node (an error: the daemon does not answer).
	Node(ctx context.Context) (*corev1.Node, error)
}

// Options configure a Server.
type Options struct {
	NodeName string
	// Address is host:port to listen on (Listen).
	Address string
	// Certificate serves TLS.
	Certificate tls.Certificate
	Auth        *Auth
	Backend     Backend
	// Daemon reaches the daemon's Kubernetes API (its unix socket): the
	// mapped requests are proxied through it to http://localhost.
	Daemon http.RoundTripper
	// Stats answers /stats/summary and /metrics/resource (nil: 404).
	Stats StatsSource
	// ClusterPod is the cluster's pod of a name bound to the node (nil:
	// none; known false until the node's watch of them synced). Set, a
	// request reaches a daemon's pod only if the cluster's pod of that
	// name is it (same UID) or its mirror pod (the kubelet's
	// IsMirrorPodOf: the config hash): the API server names a pod, not a
	// uid, and a cluster's pod may share the name of a static pod it is
	// not (docs/cluster.md).
	ClusterPod func(namespace, name string) (pod *corev1.Pod, known bool)
	Logger     *slog.Logger
}

// Server is the kubelet API.
type Server struct {
	opts  Options
	log   *slog.Logger
	proxy *httputil.ReverseProxy
}

// New returns a Server; Serve listens.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{opts: opts, log: opts.Logger.With("component", "kubelet-api")}
	s.proxy = &httputil.ReverseProxy{
		Transport:     opts.Daemon,
		FlushInterval: -1, // a followed log is live
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(targetKey{}).(*target)
			pr.Out.URL = &url.URL{Scheme: "http", Host: "localhost", Path: t.path(), RawQuery: t.query.Encode()}
			pr.Out.Host = "localhost"
			// the caller's credentials are for this port, not the daemon
			pr.Out.Header.Del("Authorization")
			for k := range pr.Out.Header {
				if len(k) > 12 && http.CanonicalHeaderKey(k[:12]) == "Impersonate-" {
					pr.Out.Header.Del(k)
				}
			}
		},
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil { // not the caller going away
				s.log.Warn("proxying to the daemon", "path", r.URL.Path, "err", err)
			}
			http.Error(w, "the podhost daemon: "+err.Error(), http.StatusBadGateway)
		},
	}
	return s
}

type targetKey struct{}

// Handler is the kubelet API behind authentication and authorization.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	short := func(h http.HandlerFunc) http.Handler {
		return http.TimeoutHandler(h, requestTimeout, "request timed out")
	}
	mux.Handle("GET /healthz", short(s.healthz))
	mux.Handle("GET /pods", short(s.pods))
	mux.Handle("GET /pods/", short(s.pods))
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	for _, sub := range []string{"exec", "attach"} {
		h := s.stream(sub)
		mux.HandleFunc("/"+sub+"/{ns}/{pod}/{container}", h)
		mux.HandleFunc("/"+sub+"/{ns}/{pod}/{uid}/{container}", h)
	}
	mux.HandleFunc("/portForward/{ns}/{pod}", s.portForward)
	mux.HandleFunc("/portForward/{ns}/{pod}/{uid}", s.portForward)
	if s.opts.Stats != nil {
		mux.Handle("GET /stats/summary", short(s.summary))
		mux.Handle("GET /metrics/resource", short(s.resourceMetrics))
	}
	mux.HandleFunc("/", http.NotFound)
	return s.opts.Auth.filter(s.opts.NodeName, mux)
}

// Listen binds Options.Address.
func (s *Server) Listen() (net.Listener, error) {
	l, err := net.Listen("tcp", s.opts.Address)
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	return l, nil
}

// Serve serves l with TLS until ctx ends. Client certificates are
// requested, not required: the authenticator checks them against the
// client CA, as the kubelet's.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler: s.Handler(),
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: tls.RequestClientCert,
			Certificates: []tls.Certificate{s.opts.Certificate}},
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	// the daemon's limits: headers (and the TLS handshake) within 5 s and
	// 128 KiB, idle keep-alive connections closed after a minute, 256
	// connections at once
	l = api.DefaultLimits.Apply(srv, l)
	s.log.Info("serving the kubelet API", "address", l.Addr().String())
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("kubelet API: %w", err)
	}
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if _, err := s.opts.Backend.Node(r.Context()); err != nil {
		http.Error(w, "the podhost daemon does not answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}

// pods is the kubelet's /pods: a PodList of the node's pods.
func (s *Server) pods(w http.ResponseWriter, r *http.Request) {
	pods, err := s.opts.Backend.Pods(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	l := corev1.PodList{TypeMeta: typeMeta("PodList")}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	writeJSON(w, &l)
}

func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	t, err := mapLog(r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container"), r.URL.Query())
	s.forward(w, r, t, err)
}

func (s *Server) stream(sub string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t, err := mapStream(sub, r.PathValue("ns"), r.PathValue("pod"), r.PathValue("uid"), r.PathValue("container"), r.URL.Query())
		s.forward(w, r, t, err)
	}
}

func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	t, err := mapPortForward(r.PathValue("ns"), r.PathValue("pod"), r.PathValue("uid"), r.URL.Query())
	s.forward(w, r, t, err)
}

// forward proxies a mapped request to the daemon, after checking the
// path's uid against the pod's (404, as the kubelet).
func (s *Server) forward(w http.ResponseWriter, r *http.Request, t *target, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.ContentLength != 0 {
		http.Error(w, "these requests have no body", http.StatusRequestEntityTooLarge)
		return
	}
	if t.uid != "" || s.opts.ClusterPod != nil {
		if code, msg := s.checkPod(r.Context(), t); code != 0 {
			http.Error(w, msg, code)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, 0) // these requests have no body; streams are hijacked
	s.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), targetKey{}, t)))
}

// checkPod: the path's uid is the daemon's pod's, and the cluster's pod
// of that name is that pod or its mirror pod; else a status and its text.
func (s *Server) checkPod(ctx context.Context, t *target) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	pods, err := s.opts.Backend.Pods(ctx)
	if err != nil {
		return http.StatusInternalServerError, err.Error()
	}
	var p *corev1.Pod
	for _, q := range pods {
		if q.Namespace == t.namespace && q.Name == t.pod {
			p = q
			break
		}
	}
	if p == nil || t.uid != "" && p.UID != t.uid {
		return http.StatusNotFound, "pod not found"
	}
	if s.opts.ClusterPod == nil {
		return 0, ""
	}
	cp, known := s.opts.ClusterPod(t.namespace, t.pod)
	if !known {
		return http.StatusServiceUnavailable, "the cluster's pods of this node are not known yet"
	}
	if cp == nil || cp.UID == p.UID {
		return 0, ""
	}
	if hash, ok := cp.Annotations[corev1.MirrorPodAnnotationKey]; ok && hash != "" && hash == p.Annotations[wellknown.AnnotationConfigHash] {
		return 0, ""
	}
	return http.StatusNotFound, "pod not found" // the cluster's pod of that name is another pod
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func typeMeta(kind string) metav1.TypeMeta { return metav1.TypeMeta{Kind: kind, APIVersion: "v1"} }
