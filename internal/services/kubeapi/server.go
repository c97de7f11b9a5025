// Package kubeapi serves the Kubernetes API for one node, so that kubectl,
// client-go programs and the rest of the Kubernetes ecosystem work against
// podhost unchanged. It is not an API server: the manifest dir stays the
// source of truth for pods, ConfigMaps and Secrets (writes go through
// Store, which writes the files), and everything else is a view of the
// daemon (Backend). What is served is the resources table
// (resources.go); docs/kube-api.md lists the paths and verbs.
//
// The wire protocols are upstream's: apimachinery's codecs (JSON, YAML,
// protobuf), Status errors, watch framing, strategic merge patch and
// managed fields; exec, attach and port-forward are the kubelet's
// streaming code (Streams).
package kubeapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// Backend is what the server reads from the daemon. Objects may be shared
// (read-only); an object is the same pointer until it changes (the hub's
// comparison is then cheap; a new object each time is correct, slower).
type Backend interface {
	// Pods: every pod the daemon shows, with status.
	Pods() []*corev1.Pod
	// ConfigMaps and Secrets of the manifest dir (as written, no status).
	ConfigMaps() []*corev1.ConfigMap
	Secrets() []*corev1.Secret
	// Events: every pod's events as core/v1 Events.
	Events() []*corev1.Event
	// Node: the machine as the kubelet's Node object would show it.
	Node(ctx context.Context) (*corev1.Node, error)
	// Changed is closed at the next change of any of the above (or when
	// ctx ends).
	Changed(ctx context.Context) <-chan struct{}
	// Logs writes a container's log (the kubelet's semantics of opts) to w,
	// flushing as it goes; errors are the kubelet's words.
	Logs(ctx context.Context, pod *corev1.Pod, opts *corev1.PodLogOptions, w io.Writer) error
	// PodMetrics and NodeMetrics: metrics.k8s.io's view (kubectl top).
	PodMetrics(ctx context.Context, namespace string) ([]metricsv1beta1.PodMetrics, error)
	NodeMetrics(ctx context.Context) (*metricsv1beta1.NodeMetrics, error)
}

// Store writes pods, ConfigMaps and Secrets through the manifest dir. Its
// errors are API errors (apierrors: Invalid with field causes, NotFound,
// AlreadyExists, Conflict) or plain errors (500).
type Store interface {
	// Stored is the object's document as the manifest dir holds it, as
	// JSON (NotFound if no document declares it).
	Stored(gr schema.GroupResource, namespace, name string) ([]byte, error)
	// Put validates doc (one object, JSON) as the manifest decoder does and
	// writes it: as a new document (create; AlreadyExists if one declares
	// the object) or over the one that declares it. It returns the object
	// as decoded (defaulted) and whether a file was written (false for a
	// dry run and for a document equal to the stored one).
	Put(ctx context.Context, gr schema.GroupResource, namespace, name string, doc []byte, create, dryRun bool) (obj runtime.Object, written bool, err error)
	// Delete removes the document declaring the object; grace, when set,
	// is the grace period its pod gets (kubectl delete --grace-period).
	Delete(ctx context.Context, gr schema.GroupResource, namespace, name string, grace *int64, dryRun bool) error
}

// Streams serves exec, attach and port-forward for a resolved pod.
type Streams interface {
	Exec(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodExecOptions)
	Attach(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodAttachOptions)
	PortForward(w http.ResponseWriter, r *http.Request, pod *corev1.Pod, opts *corev1.PodPortForwardOptions)
}

// Options configure the server.
type Options struct {
	Version string // podhost's version, shown in /version's build metadata
	Logger  *slog.Logger
	Now     func() time.Time
	// OpenAPI serves /openapi/v2 and /openapi/v3 (nil: 404).
	OpenAPI http.Handler
	// TypeConverter is the schema server-side apply merges with (nil:
	// server-side apply is refused).
	TypeConverter func() (managedfields.TypeConverter, error)
}

// Server serves the Kubernetes API.
type Server struct {
	b       Backend
	store   Store
	streams Streams
	opts    Options
	log     *slog.Logger
	hub     *hub
	mux     *http.ServeMux
	closing chan struct{}
}

// New returns a server over b, writing through store and streaming through
// streams (nil: exec, attach and port-forward answer 503).
func New(b Backend, store Store, streams Streams, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{b: b, store: store, streams: streams, opts: opts, log: opts.Logger, closing: make(chan struct{})}
	sources := map[string]source{
		"pods":          func() []runtime.Object { return objects(b.Pods()) },
		"configmaps":    func() []runtime.Object { return objects(b.ConfigMaps()) },
		"secrets":       func() []runtime.Object { return objects(b.Secrets()) },
		"events":        func() []runtime.Object { return objects(b.Events()) },
		"events.k8s.io": func() []runtime.Object { return eventsV1(b.Events()) },
		"namespaces":    s.namespaces,
		"nodes":         s.nodes,
	}
	workloadSources(b, sources)
	s.hub = newHub(sources, opts.Now())
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /version", s.versionInfo)
	s.mux.HandleFunc("GET /healthz", ok)
	s.mux.HandleFunc("GET /livez", ok)
	s.mux.HandleFunc("GET /readyz", ok)
	s.discoveryRoutes(s.mux)
	if opts.OpenAPI != nil {
		s.mux.Handle("GET /openapi/", opts.OpenAPI)
	}
	s.mux.HandleFunc("/api/", s.serveResource)
	s.mux.HandleFunc("/apis/", s.serveResource)
	return s
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }

func objects[T runtime.Object](in []T) []runtime.Object {
	out := make([]runtime.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

// Handler is the API's HTTP handler. Authentication is the listener's
// (see Authenticate).
func (s *Server) Handler() http.Handler { return s.mux }

// Close ends the server's watches (the HTTP server's shutdown then does
// not wait for them).
func (s *Server) Close() {
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
}

// Run keeps the hub's watched kinds current until ctx ends: every change
// the backend signals is numbered at once, so a watch sees every version.
func (s *Server) Run(ctx context.Context) {
	for {
		changed := s.b.Changed(ctx)
		for _, k := range s.hub.watchedKinds() {
			s.hub.sync(k)
		}
		select {
		case <-ctx.Done():
			s.Close()
			return
		case <-changed:
		}
	}
}

// serveResource dispatches a resource request by verb and subresource.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request) {
	ri, err := parseRequest(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if h := s.subresourceHandler(ri); h != nil {
		h(w, r, ri)
		return
	}
	switch ri.verb {
	case "get":
		s.get(w, r, ri)
	case "list":
		s.list(w, r, ri)
	case "watch":
		s.watch(w, r, ri)
	case "create":
		s.create(w, r, ri)
	case "update":
		s.update(w, r, ri)
	case "patch":
		s.patch(w, r, ri)
	case "delete":
		s.delete(w, r, ri)
	case "deletecollection":
		s.deleteCollection(w, r, ri)
	default:
		writeError(w, r, methodNotSupported(ri))
	}
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, notFoundPath(r.URL.Path))
}

var _ = metav1.Now
