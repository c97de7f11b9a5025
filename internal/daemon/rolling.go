package daemon

import (
	"context"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podhost/podhost/internal/desired/rolling"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/services/api"
)

// runRolling starts the workloads' rolling updates in g between the
// merged sources (in) and the rollout controller (the returned channel):
// a template change reaches the manager pod by pod, as maxSurge,
// maxUnavailable and readiness allow (internal/desired/rolling).
func (d *daemon) runRolling(ctx context.Context, g *errgroup.Group, in <-chan source.Snapshot) <-chan source.Snapshot {
	d.rolling = rolling.New(d.statuses, d.db, d.log)
	out := make(chan source.Snapshot, 1)
	g.Go(func() error { d.rolling.Run(ctx, in, out); return nil })
	return out
}

// workloadsBackend serves `podhost get deployments|statefulsets|...`.
type workloadsBackend struct{ c *rolling.Controller }

func (b workloadsBackend) Workloads() api.WorkloadList {
	var l api.WorkloadList
	for _, w := range b.c.Workloads() {
		switch {
		case w.Deployment != nil:
			l.Deployments = append(l.Deployments, *w.Deployment)
		case w.ReplicaSet != nil:
			l.ReplicaSets = append(l.ReplicaSets, *w.ReplicaSet)
		case w.StatefulSet != nil:
			l.StatefulSets = append(l.StatefulSets, *w.StatefulSet)
		case w.DaemonSet != nil:
			l.DaemonSets = append(l.DaemonSets, *w.DaemonSet)
		case w.Job != nil:
			l.Jobs = append(l.Jobs, *w.Job)
		case w.CronJob != nil:
			l.CronJobs = append(l.CronJobs, *w.CronJob)
		}
	}
	return l
}

// Workloads serves the kube API's workload kinds (kubeapi.Workloads):
// typed objects with their status.
func (b kubeBackend) Workloads() []runtime.Object {
	var out []runtime.Object
	for _, w := range b.workloads.c.Workloads() {
		switch {
		case w.Deployment != nil:
			out = append(out, w.Deployment)
		case w.ReplicaSet != nil:
			out = append(out, w.ReplicaSet)
		case w.StatefulSet != nil:
			out = append(out, w.StatefulSet)
		case w.DaemonSet != nil:
			out = append(out, w.DaemonSet)
		case w.Job != nil:
			out = append(out, w.Job)
		case w.CronJob != nil:
			out = append(out, w.CronJob)
		}
	}
	return out
}
