package kubeletapi

import (
	"context"
	"net/http"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// StatsSource is the node's resource usage as the kubelet's summary
// provider gives it.
type StatsSource interface {
	Summary(ctx context.Context) (*statsv1alpha1.Summary, error)
}

// summary is /stats/summary.
func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	sum, err := s.opts.Stats.Summary(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, sum)
}

// resourceMetrics is /metrics/resource: see resourcemetrics.go.
func (s *Server) resourceMetrics(w http.ResponseWriter, r *http.Request) {
	sum, err := s.opts.Stats.Summary(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeResourceMetrics(w, r, sum)
}
