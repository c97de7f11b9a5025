package api

// The observability endpoint (registered by Server.EnableObserve):
//
//	GET /metrics                                  Prometheus text format
//
// Pods' watches, events and usage are the Kubernetes API's (watch
// /api/v1/pods, /api/v1/events, metrics.k8s.io).

import "net/http"

// Observability is what the observability endpoint needs from the daemon.
type Observability interface {
	// Metrics serves /metrics.
	Metrics() http.Handler
}

// EnableObserve registers the observability endpoint; call before Listen.
func (s *Server) EnableObserve(o Observability) {
	s.mux.Handle("GET /metrics", o.Metrics())
}
