package rolling

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/records"
)

// Statuses is the status manager (*status.Manager): the pods' readiness.
type Statuses interface {
	Status(uid types.UID) (corev1.PodStatus, bool)
	Changed() <-chan struct{}
}

// Stored is the state db's copy of the pods' statuses and its Job
// records (*state.DB).
type Stored interface {
	GetStatus(uid types.UID) (corev1.PodStatus, error)
	JobRecords
	CronRecords
}

// Controller applies Plan to every workload of each snapshot, again at
// each status change while a rollout is under way.
type Controller struct {
	now    func() time.Time
	st     Statuses
	stored Stored // nil: none
	log    *slog.Logger

	mu    sync.Mutex          // state and jobs: Step writes, Job reads
	state map[string]State    // by workload key (kind namespace/name)
	jobs  map[string]JobState // the same, for Jobs
	// workloads are the last snapshot's (Workloads); seen, when each
	// was first seen (their creationTimestamp: podhost creates them).
	workloads []*manifest.Workload
	seen      map[string]time.Time
	// expired are the Job runs a TTL removed (jobttl.go); nil until read.
	expired map[string]records.JobRecord
	// crons are the CronJobs' states (cronctl.go); cronRecs, as stored
	// (nil until read); wake, the next schedule time of any (zero: none).
	crons    map[string]*cronEntry
	cronRecs map[string]records.CronJobRecord
	wake     time.Time
}

// New returns a Controller reading readiness from st and, after a
// restart, the statuses stored (nil: none).
func New(st Statuses, stored Stored, log *slog.Logger) *Controller {
	if log == nil {
		log = slog.Default()
	}
	return &Controller{now: time.Now, st: st, stored: stored, log: log.With("component", "rolling"), state: map[string]State{}, jobs: map[string]JobState{}, seen: map[string]time.Time{}}
}

// Run passes every snapshot of in on to out with the workloads' pods as
// Plan has them, and passes the last one on again when a status change
// moves a rollout on, until ctx is done or in is closed.
func (c *Controller) Run(ctx context.Context, in <-chan source.Snapshot, out chan<- source.Snapshot) {
	var last *source.Snapshot
	var sent string
	fresh := false
	for {
		changed := c.st.Changed()
		if last != nil {
			snap, busy := c.Step(*last)
			if sig := signature(snap.Pods); fresh || sig != sent {
				select {
				case out <- snap:
				case <-ctx.Done():
					return
				}
				sent, fresh = sig, false
			}
			if !busy {
				changed = nil // nothing to follow until the next snapshot
			}
		}
		var tick <-chan time.Time // minReadySeconds pass without a status change
		switch {
		case changed != nil:
			tick = time.After(time.Second)
		case last != nil && !c.wake.IsZero(): // a CronJob's next schedule time (the controller's 100 ms after it)
			tick = time.After(c.wake.Sub(c.now()) + 100*time.Millisecond)
		}
		select {
		case s, ok := <-in:
			if !ok {
				return
			}
			last, fresh = &s, true
		case <-changed:
		case <-tick:
		case <-ctx.Done():
			return
		}
	}
}

// Step is snap with each workload's pods as Plan (PlanJob for a Job) has
// them now; busy reports whether a rollout or a Job is under way.
func (c *Controller) Step(snap source.Snapshot) (source.Snapshot, bool) {
	inSnap := map[types.UID]bool{}
	for _, p := range snap.Pods {
		inSnap[p.UID] = true
	}
	next, jobs := map[string]State{}, map[string]JobState{}
	drop := map[types.UID]bool{}
	var hold []*corev1.Pod
	cronRuns, crons, busy := c.cronJobs(snap.Workloads, inSnap)
	made := map[*manifest.Workload]bool{}
	for _, j := range cronRuns {
		made[j] = true
	}
	all := append(slices.Clone(snap.Workloads), cronRuns...)
	for _, w := range all {
		key := workloadKey(w)
		var pods []*corev1.Pod
		switch {
		case w.CronJob != nil: // its Jobs' pods are theirs
		case w.Job != nil:
			js := PlanJob(w, c.jobState(key, w), c, c.now())
			jobs[key], pods = js, js.Pods
			busy = busy || !finished(js.Status) || w.Job.Spec.TTLSecondsAfterFinished != nil && !js.Expired ||
				made[w] && !finished(c.jobs[key].Status) // its CronJob learns it finished at the next Step
		default:
			st := Plan(w, c.state[key], c)
			next[key], pods = st, st.Pods
			if len(st.Leaving) > 0 || !samePods(st.Pods, w.Pods) {
				busy = true
				c.log.Debug("rollout under way", "workload", key, "passed", len(st.Pods), "want", len(w.Pods), "leaving", len(st.Leaving))
			}
		}
		refused := map[types.UID]bool{} // by the sources: pod security, a name another file has, a bad order
		for _, p := range w.Pods {
			refused[p.UID] = !inSnap[p.UID] && !made[w] // a CronJob's Job: its pods were checked as the CronJob's
		}
		passed := map[types.UID]bool{}
		for _, p := range pods {
			passed[p.UID] = true
			if !inSnap[p.UID] && !refused[p.UID] {
				hold = append(hold, p) // an old revision's pod, a Job's next attempt
			}
		}
		for _, p := range w.Pods {
			if !passed[p.UID] {
				drop[p.UID] = true
			}
		}
	}
	c.recordJobs(jobs)
	c.mu.Lock()
	c.state, c.jobs, c.workloads, c.crons = next, jobs, all, crons
	seen := make(map[string]time.Time, len(all))
	for _, w := range all {
		key := workloadKey(w)
		switch {
		case made[w]: // created at its scheduled time, as the controller sets it
			seen[key] = w.Job.CreationTimestamp.Time
		case w.CronJob != nil:
			seen[key] = crons[workloadKey(w)].state.Created
		}
		if seen[key].IsZero() {
			seen[key] = c.seen[key]
		}
		if seen[key].IsZero() {
			seen[key] = c.now()
		}
	}
	c.seen = seen
	c.mu.Unlock()
	if len(drop) == 0 && len(hold) == 0 {
		return snap, busy
	}
	out := snap
	out.Pods = slices.DeleteFunc(slices.Clone(snap.Pods), func(p *corev1.Pod) bool { return drop[p.UID] })
	out.Pods = append(out.Pods, hold...)
	return out, busy
}

func samePods(a, b []*corev1.Pod) bool {
	return slices.EqualFunc(a, b, func(x, y *corev1.Pod) bool { return x.UID == y.UID })
}

// Recorded implements JobPods: the status manager tracks the pod, or the
// state db holds its last status.
func (c *Controller) Recorded(uid types.UID) bool {
	if _, ok := c.st.Status(uid); ok {
		return true
	}
	if c.stored == nil {
		return false
	}
	_, err := c.stored.GetStatus(uid)
	return err == nil
}

// Phase implements JobPods: the pod's phase and its containers' restarts.
func (c *Controller) Phase(uid types.UID) (corev1.PodPhase, int32, bool) {
	st, ok := c.st.Status(uid)
	if !ok {
		return "", 0, false
	}
	var restarts int32
	for _, cs := range st.ContainerStatuses {
		restarts += cs.RestartCount
	}
	return st.Phase, restarts, true
}

// ReadyFor implements Pods: since the pod's Ready condition turned True.
func (c *Controller) ReadyFor(uid types.UID) (time.Duration, bool) {
	st, ok := c.st.Status(uid)
	if !ok {
		return 0, false
	}
	for _, cond := range st.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return c.now().Sub(cond.LastTransitionTime.Time), true
		}
	}
	return 0, false
}

// Gone implements Pods: the status manager no longer tracks the pod.
func (c *Controller) Gone(uid types.UID) bool {
	_, ok := c.st.Status(uid)
	return !ok
}

// signature identifies a set of pods: their UIDs and hashes.
func signature(pods []*corev1.Pod) string {
	keys := make([]string, 0, len(pods))
	for _, p := range pods {
		keys = append(keys, string(p.UID)+"="+manifest.Hash(p))
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
