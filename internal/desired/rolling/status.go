package rolling

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// counts are a workload's pods as its controller counts them in its status.
type counts struct {
	replicas, updated, ready, available int32
}

// Workloads returns the workloads of the last snapshot, copied, with the
// status their controllers would report, from the pods passed on.
func (c *Controller) Workloads() []*manifest.Workload {
	c.mu.Lock()
	ws := c.workloads
	states := make(map[string]State, len(c.state))
	for k, v := range c.state {
		states[k] = v
	}
	jobs := make(map[string]JobState, len(c.jobs))
	for k, v := range c.jobs {
		jobs[k] = v
	}
	crons := make(map[string]CronState, len(c.crons))
	for k, e := range c.crons {
		crons[k] = e.state
	}
	seen := make(map[string]time.Time, len(c.seen))
	for k, v := range c.seen {
		seen[k] = v
	}
	c.mu.Unlock()
	out := make([]*manifest.Workload, 0, len(ws))
	for _, w := range ws {
		key := w.Kind + " " + w.Meta().Namespace + "/" + w.Meta().Name
		cp := &manifest.Workload{Kind: w.Kind}
		switch {
		case w.Deployment != nil:
			cp.Deployment = w.Deployment.DeepCopy()
			n := c.count(w, states[key], w.Deployment.Spec.MinReadySeconds)
			cp.Deployment.APIVersion, cp.Deployment.Kind = "apps/v1", w.Kind
			cp.Deployment.Status = appsv1.DeploymentStatus{ObservedGeneration: w.Deployment.Generation, Replicas: n.replicas,
				UpdatedReplicas: n.updated, ReadyReplicas: n.ready, AvailableReplicas: n.available, UnavailableReplicas: max(0, n.replicas-n.available)}
		case w.ReplicaSet != nil:
			cp.ReplicaSet = w.ReplicaSet.DeepCopy()
			n := c.count(w, states[key], w.ReplicaSet.Spec.MinReadySeconds)
			cp.ReplicaSet.APIVersion, cp.ReplicaSet.Kind = "apps/v1", w.Kind
			cp.ReplicaSet.Status = appsv1.ReplicaSetStatus{Replicas: n.replicas, ReadyReplicas: n.ready, AvailableReplicas: n.available}
		case w.StatefulSet != nil:
			cp.StatefulSet = w.StatefulSet.DeepCopy()
			n := c.count(w, states[key], w.StatefulSet.Spec.MinReadySeconds)
			cp.StatefulSet.APIVersion, cp.StatefulSet.Kind = "apps/v1", w.Kind
			cp.StatefulSet.Status = appsv1.StatefulSetStatus{Replicas: n.replicas, ReadyReplicas: n.ready, CurrentReplicas: n.updated,
				UpdatedReplicas: n.updated, AvailableReplicas: n.available}
		case w.DaemonSet != nil:
			cp.DaemonSet = w.DaemonSet.DeepCopy()
			n := c.count(w, states[key], w.DaemonSet.Spec.MinReadySeconds)
			cp.DaemonSet.APIVersion, cp.DaemonSet.Kind = "apps/v1", w.Kind
			cp.DaemonSet.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: n.replicas, NumberReady: n.ready,
				UpdatedNumberScheduled: n.updated, NumberAvailable: n.available, NumberUnavailable: max(0, 1-n.available)}
		case w.Job != nil:
			cp.Job = w.Job.DeepCopy()
			cp.Job.APIVersion, cp.Job.Kind = "batch/v1", w.Kind
			js := jobs[key]
			cp.Job.Status = *js.Status.DeepCopy()
			var ready int32
			for _, p := range js.Pods {
				if _, ok := c.ReadyFor(p.UID); ok {
					ready++
				}
			}
			cp.Job.Status.Ready = &ready
		case w.CronJob != nil:
			cp.CronJob = w.CronJob.DeepCopy()
			cp.CronJob.APIVersion, cp.CronJob.Kind = "batch/v1", w.Kind
			cp.CronJob.Status = cronStatus(w.CronJob, crons[key], jobs)
		}
		cp.Meta().CreationTimestamp = metav1.NewTime(seen[key])
		out = append(out, cp)
	}
	return out
}

// count counts the pods passed on for w: those of its current revision
// (updated), Ready, and Ready for minReadySeconds (available).
func (c *Controller) count(w *manifest.Workload, st State, minReadySeconds int32) counts {
	pods := st.Pods
	if len(pods) == 0 {
		pods = w.Pods
	}
	rev := ""
	if len(w.Pods) > 0 {
		rev = manifest.WorkloadRevision(w.Pods[0])
	}
	var n counts
	for _, p := range pods {
		n.replicas++
		if manifest.WorkloadRevision(p) == rev {
			n.updated++
		}
		if d, ok := c.ReadyFor(p.UID); ok {
			n.ready++
			if d >= time.Duration(minReadySeconds)*time.Second {
				n.available++
			}
		}
	}
	return n
}

// cronStatus is a CronJob's status: its unfinished Jobs (active), its
// last schedule and success times.
func cronStatus(cj *batchv1.CronJob, st CronState, jobs map[string]JobState) batchv1.CronJobStatus {
	var s batchv1.CronJobStatus
	for _, r := range st.Runs {
		name := manifest.CronJobName(cj.Name, r.Scheduled)
		if js, ok := jobs[manifest.KindJob+" "+cj.Namespace+"/"+name]; ok && finished(js.Status) {
			continue
		}
		s.Active = append(s.Active, corev1.ObjectReference{Kind: manifest.KindJob, APIVersion: "batch/v1", Namespace: cj.Namespace, Name: name,
			UID: manifest.JobUID(cj.Namespace, name)})
	}
	if !st.LastScheduleTime.IsZero() {
		s.LastScheduleTime = ptrTime(st.LastScheduleTime)
	}
	if !st.LastSuccessfulTime.IsZero() {
		s.LastSuccessfulTime = ptrTime(st.LastSuccessfulTime)
	}
	return s
}
