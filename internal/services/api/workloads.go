package api

// Workload endpoint (registered by Server.EnableWorkloads):
//
//	GET /v1/workloads   WorkloadList: the manifests' Deployments, ReplicaSets,
//	                    StatefulSets, DaemonSets, Jobs and CronJobs with their status

import (
	"context"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

// WorkloadList is every workload of the manifests, by kind, each with the
// status its controller would report (internal/desired/rolling).
type WorkloadList struct {
	Deployments  []appsv1.Deployment  `json:"deployments,omitempty"`
	ReplicaSets  []appsv1.ReplicaSet  `json:"replicaSets,omitempty"`
	StatefulSets []appsv1.StatefulSet `json:"statefulSets,omitempty"`
	DaemonSets   []appsv1.DaemonSet   `json:"daemonSets,omitempty"`
	Jobs         []batchv1.Job        `json:"jobs,omitempty"`
	CronJobs     []batchv1.CronJob    `json:"cronJobs,omitempty"`
}

// Workloads is what the workload endpoint needs.
type Workloads interface {
	Workloads() WorkloadList
}

// EnableWorkloads registers GET /v1/workloads; call before Listen.
func (s *Server) EnableWorkloads(ws Workloads) {
	s.mux.HandleFunc("GET /v1/workloads", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, ws.Workloads()) })
}

// ListWorkloads returns the manifests' workloads with their status.
func (c *Client) ListWorkloads(ctx context.Context) (*WorkloadList, error) {
	var l WorkloadList
	return &l, c.getJSON(ctx, "/v1/workloads", &l)
}
