package metrics

import "github.com/prometheus/client_golang/prometheus"

// Rollbacks counts pod versions podhost replaced by an earlier one
// (internal/desired/rollout).
type Rollbacks struct{ c *prometheus.CounterVec }

// NewRollbacks registers podhost_pod_rollbacks_total.
func (m *Metrics) NewRollbacks() *Rollbacks {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podhost_pod_rollbacks_total",
		Help: "Pod versions replaced by their previous version, by trigger (auto: not Ready within the rollback window; undo: podhost rollout undo) and reason.",
	}, []string{"trigger", "reason"})
	m.reg.MustRegister(c)
	return &Rollbacks{c: c}
}

// ObserveRollback records one rollback.
func (r *Rollbacks) ObserveRollback(trigger, reason string) {
	r.c.WithLabelValues(trigger, reason).Inc()
}
