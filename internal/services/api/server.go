// Package api serves podhost's own HTTP/JSON API, /v1, on the unix socket
// beside the Kubernetes API (internal/services/kubeapi, mounted on the same
// server), and provides the client the CLI uses (client.go). /v1 is only
// what the Kubernetes API has no resource for (decisions.md 23):
//
//	GET /healthz                                  200 "ok" while the daemon runs
//	GET /readyz                                   200 after the first full sync while containerd
//	                                              answers, else 503
//	GET /v1/errors                                manifest files that failed to load
//	GET /v1/runtime                               RuntimeStatus: containerd's health
//	GET /metrics                                  Prometheus (observe.go)
//	GET /v1/pods/{namespace}/{name}/rollout/history, POST .../rollout/undo (rollout.go)
//	POST /v1/pods/{namespace}/{name}/grace        a delete's grace period (grace.go)
//
// Pods, events, logs, exec, the node and metrics are the Kubernetes API's
// (/api/v1/..., /apis/metrics.k8s.io/...).
//
// Namespaces and names in /v1/pods/ paths are validated as the manifest
// decoder validates them (400 otherwise), before routing.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
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

// LogRequest selects a container log (Client.Logs: pods/log).
type LogRequest struct {
	Namespace, Name, Container string
	Follow, Previous           bool
	Timestamps                 bool
	Tail                       int // < 0: all
	// Since, when set, skips messages logged before it (--since,
	// --since-time).
	Since time.Time
}

// Backend is what the server needs from the daemon.
type Backend interface {
	FileErrors() []FileError
	Ready() bool
	Runtime() RuntimeStatus
}

// ErrNotFound: an unknown pod or container (the client's 404s match it).
var ErrNotFound = errors.New("not found")

// ErrConflict: the target is in the wrong state (the client's 409s match it).
var ErrConflict = errors.New("conflict")

// statusError is an error whose message is exactly msg and which matches
// its sentinel with errors.Is.
type statusError struct {
	msg      string
	sentinel error
}

func (e *statusError) Error() string { return e.msg }
func (e *statusError) Unwrap() error { return e.sentinel }

// NotFoundf returns an error matching ErrNotFound with the formatted message
// (and nothing appended).
func NotFoundf(format string, args ...any) error {
	return &statusError{msg: fmt.Sprintf(format, args...), sentinel: ErrNotFound}
}

// Conflictf returns an error matching ErrConflict with the formatted message
// (and nothing appended).
func Conflictf(format string, args ...any) error {
	return &statusError{msg: fmt.Sprintf(format, args...), sentinel: ErrConflict}
}

// Server is the API server.
type Server struct {
	b   Backend
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
	mux.HandleFunc("GET /v1/errors", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.b.FileErrors()) })
	mux.HandleFunc("GET /v1/runtime", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.b.Runtime()) })
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

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
