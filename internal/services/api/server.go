// Package api serves podhost's HTTP/JSON API on a unix socket and provides
// the client the CLI uses.
//
//	GET /healthz                                  200 "ok" while the daemon runs
//	GET /readyz                                   200 after the first full sync while containerd
//	                                              answers, else 503
//	GET /v1/pods                                  core/v1 PodList with status; Warning headers
//	                                              name refused manifest files and a containerd outage
//	GET /v1/pods/{namespace}/{name}               core/v1 Pod with status (Warning: containerd outage)
//	GET /v1/pods/{namespace}/{name}/events        []Event
//	GET /v1/pods/{namespace}/{name}/log?container=&follow=&previous=&tail=&timestamps=&sinceTime=RFC3339
//	GET /v1/errors                                manifest files that failed to load
//	GET /v1/runtime                               RuntimeStatus: containerd's health
//	GET /v1/node                                  core/v1 Node: this machine (name, labels, boot time,
//	                                              capacity, allocatable, Ready, addresses, system info)
//	POST /v1/pods/{namespace}/{name}/exec?container=&tty=&stdin=&command=...
//	                                              upgrades to the exec protocol (exec.go)
//
// The observability endpoints (/metrics, watches, all events, top) are in
// observe.go.
//
// Namespaces and names in /v1/pods/ paths are validated as the manifest
// decoder validates them (400 otherwise), before routing.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is one pod event; a repeated one is aggregated, as the kubelet's
// recorder does: Count occurrences, the first at First, the last at Time.
type Event struct {
	Time    time.Time `json:"time"`
	First   time.Time `json:"first,omitzero"`
	Count   int32     `json:"count,omitempty"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
}

// FileError is a manifest file that failed to load, or (Source
// SourceImagesDir) an image archive of the images directory.
type FileError struct {
	File   string   `json:"file"`
	Error  string   `json:"error"`
	Kept   []string `json:"kept,omitempty"`
	Source string   `json:"source,omitempty"` // "" = a manifest
	// Pods are the pods (namespace/name) the file's errors concern: those
	// it declares, kept or running, and those it declares again (a
	// duplicate). `get` warns about the files of the pods it lists.
	Pods []string `json:"pods,omitempty"`
}

// SourceImagesDir marks a FileError of the images directory.
const SourceImagesDir = "images-dir"

// LogRequest selects a container log.
type LogRequest struct {
	Namespace, Name, Container string
	Follow, Previous           bool
	Timestamps                 bool
	Tail                       int
	// Since, when set, skips messages logged before it (--since,
	// --since-time).
	Since time.Time
}

// Backend is what the server needs from the daemon.
type Backend interface {
	// Pods returns every pod. The objects may be shared with other callers
	// (read-only), and an object is the same until its pod changes (the
	// watch diff relies on it; a new object each time is correct, slower).
	Pods() []*corev1.Pod
	Events(namespace, name string) ([]Event, error)
	FileErrors() []FileError
	Ready() bool
	Runtime() RuntimeStatus
	// Node is this machine as the kubelet's Node object would show it:
	// podhost's node is the machine itself.
	Node(ctx context.Context) (*corev1.Node, error)
	// Logs writes the selected log to w until done (or ctx ends when following).
	Logs(ctx context.Context, req LogRequest, w http.ResponseWriter) error
	// Exec runs req.Command in a running container and returns its exit
	// code; stdin is nil without req.Stdin. Errors matching ErrNotFound or
	// ErrConflict (not running) are reported as such to the client.
	Exec(ctx context.Context, req ExecRequest, stdin io.Reader, stdout, stderr io.Writer) (int, error)
}

// ErrNotFound is returned by backends for unknown pods or containers.
var ErrNotFound = errors.New("not found")

// Server is the API server.
type Server struct {
	b   Backend
	obs Observability // nil until EnableObserve
	log *slog.Logger
	mux *http.ServeMux
	srv *http.Server
	// Limits: DefaultLimits unless changed before Listen (tests).
	Limits Limits
	// closing is closed when shutdown begins: streams (watches) end then
	// instead of holding the shutdown for its whole timeout.
	closing chan struct{}
}

// NewServer returns a Server over b.
func NewServer(b Backend, log *slog.Logger) *Server {
	mux := http.NewServeMux()
	s := &Server{b: b, log: log, mux: mux, closing: make(chan struct{}), Limits: DefaultLimits}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /v1/pods", s.listPods)
	mux.HandleFunc("GET /v1/pods/{namespace}/{name}", s.getPod)
	mux.HandleFunc("GET /v1/pods/{namespace}/{name}/events", s.events)
	mux.HandleFunc("GET /v1/pods/{namespace}/{name}/log", s.logs)
	mux.HandleFunc("POST /v1/pods/{namespace}/{name}/exec", s.exec)
	mux.HandleFunc("GET /v1/errors", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.b.FileErrors()) })
	mux.HandleFunc("GET /v1/runtime", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.b.Runtime()) })
	mux.HandleFunc("GET /v1/node", s.node)
	s.srv = &http.Server{Handler: validatePodPaths(mux)}
	s.srv.RegisterOnShutdown(func() { close(s.closing) })
	return s
}

// Mount serves h on the socket for the given mux patterns too (the
// Kubernetes API: one server, one socket).
func (s *Server) Mount(h http.Handler, patterns ...string) {
	for _, p := range patterns {
		s.mux.Handle(p, h)
	}
}

// Listen creates the unix socket at path (mode 0660, root) and serves until
// ctx is done, within s.Limits.
func (s *Server) Listen(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		l.Close()
		return err
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(sctx)
	}()
	err = s.srv.Serve(s.Limits.Apply(s.srv, l))
	if !errors.Is(err, http.ErrServerClosed) {
		return err // Serve failed: ctx is not done, and the caller cancels it
	}
	<-stopped // connections drained (or cut after 2 s)
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.b.Ready() {
		http.Error(w, "not ready: first sync in progress", http.StatusServiceUnavailable)
		return
	}
	if warn := s.b.Runtime().Warning(); warn != "" {
		http.Error(w, "not ready: "+warn, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *Server) listPods(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("watch") == "true" && s.obs != nil {
		s.watchPods(w, r)
		return
	}
	addWarning(w, s.b.Runtime().Warning())
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, p := range s.b.Pods() {
		list.Items = append(list.Items, *p)
	}
	if list.Items == nil {
		list.Items = []corev1.Pod{}
	}
	writeJSON(w, list)
}

func (s *Server) find(r *http.Request) *corev1.Pod {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	for _, p := range s.b.Pods() {
		if p.Namespace == ns && p.Name == name {
			return p
		}
	}
	return nil
}

func (s *Server) getPod(w http.ResponseWriter, r *http.Request) {
	p := s.find(r)
	if p == nil {
		notFound(w, r)
		return
	}
	addWarning(w, s.b.Runtime().Warning())
	writeJSON(w, p)
}

func (s *Server) node(w http.ResponseWriter, r *http.Request) {
	n, err := s.b.Node(r.Context())
	if err != nil {
		http.Error(w, "node: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, n)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	evs, err := s.b.Events(r.PathValue("namespace"), r.PathValue("name"))
	if errors.Is(err, ErrNotFound) {
		notFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, evs)
}

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail, _ := strconv.Atoi(q.Get("tail"))
	if q.Get("tail") == "" {
		tail = -1
	}
	req := LogRequest{
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"), Container: q.Get("container"),
		Follow: q.Get("follow") == "true", Previous: q.Get("previous") == "true",
		Timestamps: q.Get("timestamps") == "true", Tail: tail,
	}
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			http.Error(w, "sinceTime: want an RFC 3339 time: "+err.Error(), http.StatusBadRequest)
			return
		}
		req.Since = t
	}
	err := s.b.Logs(r.Context(), req, w)
	switch {
	case errors.Is(err, ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil && r.Context().Err() == nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
}

func notFound(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("pods %q not found", r.PathValue("name")), http.StatusNotFound)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
