package rolling

import (
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
)

// CronRecords keep the CronJobs' progress (*state.DB): a podhost restart
// neither runs a scheduled time again nor loses a Job of the history.
type CronRecords interface {
	ListCronJobs() ([]records.CronJobRecord, error)
	PutCronJob(r records.CronJobRecord) error
	DeleteCronJob(key string) error
}

// cronEntry is a CronJob's state and the Jobs its runs are (each made
// once, from the jobTemplate of that time, as the controller creates a
// Job: an edit of the template changes the next runs only).
type cronEntry struct {
	state CronState
	jobs  map[int64]*manifest.Workload // by scheduled Unix second
}

// cronJobs plans each CronJob of ws at now and returns the Jobs of its
// runs, planned then as Jobs from files are. unknown: a run's Job has no
// state yet (first sight, a podhost restart): Step runs again soon, its
// status known.
func (c *Controller) cronJobs(ws []*manifest.Workload, inSnap map[types.UID]bool) (jobs []*manifest.Workload, entries map[string]*cronEntry, unknown bool) {
	now := c.now()
	c.loadCronRecords()
	entries = map[string]*cronEntry{}
	var wake time.Time
	for _, w := range ws {
		cj := w.CronJob
		if cj == nil || !allIn(w.Pods, inSnap) { // its pods refused by the sources (pod security, names): no runs
			continue
		}
		sched, err := manifest.CronSchedule(cj)
		if err != nil {
			continue // refused when decoded
		}
		key := workloadKey(w)
		e := c.cronEntry(key, now)
		status := c.runStatus(cj.Namespace, cj.Name, &unknown)
		plan := PlanCron(cj, sched, e.state, status, now)
		for _, ev := range plan.Events {
			lvl := c.log.Info
			if ev.Type == corev1.EventTypeWarning {
				lvl = c.log.Warn
			}
			lvl("cronjob event", "cronjob", key, "type", ev.Type, "reason", ev.Reason, "message", ev.Message)
		}
		e.state = plan.State
		jobs = append(jobs, c.cronRuns(w, e)...)
		entries[key] = e
		c.storeCron(key, e.state)
		if !*cj.Spec.Suspend {
			if t := sched.Next(now); !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
				wake = t
			}
		}
	}
	for key := range c.cronRecs {
		if entries[key] == nil {
			delete(c.cronRecs, key)
			if c.stored != nil {
				if err := c.stored.DeleteCronJob(key); err != nil {
					c.log.Warn("cronjob record not deleted", "cronjob", key, "err", err)
				}
			}
		}
	}
	c.wake = wake
	return jobs, entries, unknown
}

// cronEntry is the CronJob's entry: the last Step's, else its record (a
// podhost restart), else a new one created now.
func (c *Controller) cronEntry(key string, now time.Time) *cronEntry {
	if e, ok := c.crons[key]; ok {
		return &cronEntry{state: e.state, jobs: e.jobs}
	}
	e := &cronEntry{state: CronState{Created: now}, jobs: map[int64]*manifest.Workload{}}
	if r, ok := c.cronRecs[key]; ok {
		e.state = CronState{Created: r.Created, LastScheduleTime: r.LastScheduleTime, LastSuccessfulTime: r.LastSuccessfulTime, Runs: r.Runs}
	}
	return e
}

// cronRuns makes the Jobs of e's runs not made yet; a run whose Job the
// jobTemplate no longer makes (edited while podhost was stopped) leaves
// the history rather than run again.
func (c *Controller) cronRuns(w *manifest.Workload, e *cronEntry) []*manifest.Workload {
	jobs := map[int64]*manifest.Workload{}
	var runs []CronRun
	var out []*manifest.Workload
	for _, r := range e.state.Runs {
		j := e.jobs[r.Scheduled.Unix()]
		if j == nil {
			var err error
			if j, err = w.CronJobRun(r.Scheduled); err != nil {
				c.log.Warn("cronjob run not made", "cronjob", workloadKey(w), "scheduled", r.Scheduled, "err", err)
				continue
			}
			var first types.UID
			if len(j.Pods) > 0 {
				first = j.Pods[0].UID
			}
			if r.FirstUID != "" && r.FirstUID != first {
				c.log.Warn("cronjob run made from an earlier jobTemplate: dropped from the history", "cronjob", workloadKey(w), "job", j.Job.Name)
				continue
			}
			r.FirstUID = first
		}
		jobs[r.Scheduled.Unix()] = j
		runs = append(runs, r)
		out = append(out, j)
	}
	e.state.Runs, e.jobs = runs, jobs
	return out
}

// runStatus answers PlanCron from the Jobs' last states; a run without
// one sets *unknown (and counts as active).
func (c *Controller) runStatus(ns, name string, unknown *bool) func(time.Time) RunStatus {
	return func(t time.Time) RunStatus {
		js, ok := c.jobs[manifest.KindJob+" "+ns+"/"+manifest.CronJobName(name, t)]
		if !ok {
			*unknown = true
			return RunStatus{}
		}
		for _, cond := range js.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case batchv1.JobComplete:
				return RunStatus{Finished: true, Succeeded: true, CompletionTime: cond.LastTransitionTime.Time}
			case batchv1.JobFailed:
				return RunStatus{Finished: true, CompletionTime: cond.LastTransitionTime.Time}
			}
		}
		return RunStatus{}
	}
}

func (c *Controller) loadCronRecords() {
	if c.cronRecs != nil {
		return
	}
	c.cronRecs = map[string]records.CronJobRecord{}
	if c.stored == nil {
		return
	}
	recs, err := c.stored.ListCronJobs()
	if err != nil {
		c.log.Warn("cronjob records unreadable: CronJobs start anew", "err", err)
		return
	}
	for _, r := range recs {
		c.cronRecs[r.Key] = r
	}
}

// storeCron writes the CronJob's record when it changed.
func (c *Controller) storeCron(key string, st CronState) {
	r := records.CronJobRecord{Key: key, Created: st.Created, LastScheduleTime: st.LastScheduleTime, LastSuccessfulTime: st.LastSuccessfulTime, Runs: st.Runs}
	if old, ok := c.cronRecs[key]; ok && reflect.DeepEqual(old, r) {
		return
	}
	c.cronRecs[key] = r
	if c.stored == nil {
		return
	}
	if err := c.stored.PutCronJob(r); err != nil {
		c.log.Warn("cronjob record not stored: a restart may run a scheduled time again", "cronjob", key, "err", err)
	}
}

func allIn(pods []*corev1.Pod, in map[types.UID]bool) bool {
	for _, p := range pods {
		if !in[p.UID] {
			return false
		}
	}
	return true
}

func workloadKey(w *manifest.Workload) string {
	return w.Kind + " " + w.Meta().Namespace + "/" + w.Meta().Name
}
