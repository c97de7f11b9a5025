package rolling

import (
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
)

// maxMissedSchedules is the CronJob controller's: more missed start times
// than that since the last one is a TooManyMissedTimes warning.
const maxMissedSchedules = 100

// CronState is a CronJob's progress, as its controller keeps it in the
// CronJob's status and in the Jobs it made.
type CronState struct {
	// Created is the CronJob's creationTimestamp: when podhost first saw
	// it (no run is caught up from before).
	Created time.Time
	// LastScheduleTime and LastSuccessfulTime: zero for none.
	LastScheduleTime, LastSuccessfulTime time.Time
	// Runs are the Jobs that exist, oldest scheduled first.
	Runs []CronRun
}

// CronRun is one Job a CronJob made (its scheduled time and first pod).
type CronRun = records.CronRun

// RunStatus is how a run's Job stands: finished (Complete or Failed),
// succeeded (Complete), and when.
type RunStatus struct {
	Finished, Succeeded bool
	CompletionTime      time.Time
}

// CronEvent is an event the controller records on the CronJob.
type CronEvent struct {
	Type, Reason, Message string
}

// CronPlan is what PlanCron decided: the new state, the run to make (zero:
// none) and the events.
type CronPlan struct {
	State  CronState
	Create time.Time
	Events []CronEvent
}

// PlanCron does what the CronJob controller's syncCronJob and
// cleanupFinishedJobs do at now on one node: notes the runs that
// succeeded, makes at most one run for the most recent schedule time
// missed (mostRecentScheduleTime: none before startingDeadlineSeconds or
// creation, a warning past 100 missed), honours suspend and
// concurrencyPolicy (Forbid: none while one is active; Replace: the active
// ones go), and keeps the successful and failed history limits. status
// answers for each run; sched is the parsed schedule (manifest.CronSchedule).
func PlanCron(cj *batchv1.CronJob, sched cron.Schedule, st CronState, status func(time.Time) RunStatus, now time.Time) CronPlan {
	p := CronPlan{State: st}
	p.State.Runs = slices.Clone(st.Runs)
	for _, r := range p.State.Runs {
		if s := status(r.Scheduled); s.Succeeded && s.CompletionTime.After(p.State.LastSuccessfulTime) {
			p.State.LastSuccessfulTime = s.CompletionTime
		}
	}
	if cj.Spec.Suspend == nil || !*cj.Spec.Suspend {
		p.schedule(cj, sched, status, now)
	}
	p.cleanup(cj, status)
	return p
}

// schedule makes the run of the most recent missed schedule time.
func (p *CronPlan) schedule(cj *batchv1.CronJob, sched cron.Schedule, status func(time.Time) RunStatus, now time.Time) {
	st := &p.State
	scheduled, many, err := mostRecentScheduleTime(st, cj.Spec.StartingDeadlineSeconds, sched, now)
	if err != nil {
		p.event(corev1.EventTypeWarning, "InvalidSchedule", fmt.Sprintf("invalid schedule: %s : %s", cj.Spec.Schedule, err))
		return
	}
	if scheduled.IsZero() {
		return
	}
	if many {
		p.event(corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		p.event(corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: "+scheduled.UTC().Format(time.RFC1123Z))
		return
	}
	if scheduled.Equal(st.LastScheduleTime) || slices.ContainsFunc(st.Runs, func(r CronRun) bool { return r.Scheduled.Equal(scheduled) }) {
		return
	}
	var active []time.Time
	for _, r := range st.Runs {
		if !status(r.Scheduled).Finished {
			active = append(active, r.Scheduled)
		}
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(active) > 0 {
			p.event(corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return
		}
	case batchv1.ReplaceConcurrent:
		for _, t := range active {
			p.remove(cj.Name, t)
		}
	}
	st.Runs = append(st.Runs, CronRun{Scheduled: scheduled})
	st.LastScheduleTime, p.Create = scheduled, scheduled
	p.event(corev1.EventTypeNormal, "SuccessfulCreate", "Created job "+manifest.CronJobName(cj.Name, scheduled))
}

// cleanup removes the oldest finished runs past the history limits.
func (p *CronPlan) cleanup(cj *batchv1.CronJob, status func(time.Time) RunStatus) {
	var ok, failed []time.Time
	for _, r := range p.State.Runs {
		switch s := status(r.Scheduled); {
		case s.Succeeded:
			ok = append(ok, r.Scheduled)
		case s.Finished:
			failed = append(failed, r.Scheduled)
		}
	}
	for _, h := range []struct {
		runs  []time.Time
		limit *int32
	}{{ok, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if h.limit == nil {
			continue
		}
		for i := 0; i < len(h.runs)-int(*h.limit); i++ {
			p.remove(cj.Name, h.runs[i]) // oldest first: Runs are in order
		}
	}
}

func (p *CronPlan) remove(name string, scheduled time.Time) {
	p.State.Runs = slices.DeleteFunc(p.State.Runs, func(r CronRun) bool { return r.Scheduled.Equal(scheduled) })
	p.event(corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job "+manifest.CronJobName(name, scheduled))
}

func (p *CronPlan) event(typ, reason, msg string) {
	p.Events = append(p.Events, CronEvent{Type: typ, Reason: reason, Message: msg})
}

// mostRecentScheduleTime is the controller's (pkg/controller/cronjob):
// the latest schedule time after the last one (or creation, or now less
// startingDeadlineSeconds) and not after now, zero for none; many: more
// than 100 were missed. The count is the controller's approximation.
func mostRecentScheduleTime(st *CronState, deadline *int64, sched cron.Schedule, now time.Time) (time.Time, bool, error) {
	earliest := st.Created
	if !st.LastScheduleTime.IsZero() {
		earliest = st.LastScheduleTime
	}
	if deadline != nil {
		if d := now.Add(-time.Duration(*deadline) * time.Second); d.After(earliest) {
			earliest = d
		}
	}
	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	switch {
	case now.Before(t1):
		return time.Time{}, false, nil
	case now.Before(t2):
		return t1, false, nil
	}
	between := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if between < 1 {
		return time.Time{}, false, fmt.Errorf("time difference between two schedules is less than 1 second")
	}
	missed := int64(now.Sub(t1).Seconds())/between + 1
	var recent time.Time
	for t := sched.Next(t1.Add(time.Duration((missed-2)*between) * time.Second)); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		recent = t
	}
	return recent, missed > maxMissedSchedules, nil
}
