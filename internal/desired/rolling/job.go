package rolling

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// The Job controller's backoff before a failed pod is replaced: 10 s,
// doubled per failure, at most 6 min (pkg/controller/job).
const (
	jobBackoffBase = 10 * time.Second
	jobBackoffMax  = 6 * time.Minute
)

// Job condition reasons and messages, the Job controller's.
const (
	ReasonBackoffLimitExceeded = batchv1.JobReasonBackoffLimitExceeded // "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = batchv1.JobReasonDeadlineExceeded     // "DeadlineExceeded"
	ReasonCompletionsReached   = batchv1.JobReasonCompletionsReached   // "CompletionsReached"
)

// JobState is a Job's progress: its pods (every attempt so far: a
// finished pod stays, as on a cluster) and status.
type JobState struct {
	Pods   []*corev1.Pod
	Status batchv1.JobStatus
	failed map[types.UID]bool // pods seen failed (each counted once, at that time)
	last   time.Time          // the last failure
	first  types.UID          // the run's first pod: a new template is a new run
	// Expired: finished, and ttlSecondsAfterFinished has passed: its pods
	// are removed and the run is not made again (the TTL-after-finished
	// controller deletes the Job; its document still declares it).
	Expired bool
}

// JobPods answers PlanJob's questions about the pods that run.
type JobPods interface {
	// Phase is the pod's phase and its containers' restarts; false when
	// the pod has no status yet.
	Phase(uid types.UID) (corev1.PodPhase, int32, bool)
	// Recorded: the pod has a status, tracked or stored (a podhost
	// restart: the pods a Job made before it).
	Recorded(uid types.UID) bool
}

// PlanJob runs a Job as its controller does: up to parallelism pods at a
// time until completions succeeded; a failed pod (or, restartPolicy
// OnFailure, a container restart) counts against backoffLimit, replaced
// after the controller's backoff; past backoffLimit or
// activeDeadlineSeconds the Job fails and its running pods stop.
func PlanJob(w *manifest.Workload, prev JobState, pods JobPods, now time.Time) JobState {
	j := w.Job
	st := prev
	if st.first == "" || len(w.Pods) > 0 && st.first != w.Pods[0].UID { // first sight, or a new template
		st = JobState{Pods: recordedAttempts(w, pods), Status: batchv1.JobStatus{StartTime: ptrTime(now)}}
		if len(w.Pods) > 0 {
			st.first = w.Pods[0].UID
		}
	}
	if st.failed == nil {
		st.failed = map[types.UID]bool{}
	}
	if finished(st.Status) {
		if at, ok := ExpiresAt(j, st.Status); ok && !now.Before(at) {
			st.Pods, st.Expired = nil, true
		}
		return st
	}
	var succeeded, failed, restarts, active int32
	for _, p := range st.Pods {
		phase, r, _ := pods.Phase(p.UID)
		switch phase {
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed++
			if !st.failed[p.UID] {
				st.failed[p.UID], st.last = true, now
			}
		default:
			active++
			restarts += r
		}
	}
	st.Status.Succeeded, st.Status.Failed, st.Status.Active = succeeded, failed, active
	switch {
	case succeeded >= *j.Spec.Completions:
		st.Status.Conditions = append(st.Status.Conditions, condition(batchv1.JobComplete, ReasonCompletionsReached, "Reached expected number of succeeded pods", now))
		st.Status.CompletionTime = ptrTime(now)
	case failed+restarts > *j.Spec.BackoffLimit:
		st = failJob(st, pods, ReasonBackoffLimitExceeded, "Job has reached the specified backoff limit", now)
	case j.Spec.ActiveDeadlineSeconds != nil && now.Sub(st.Status.StartTime.Time) >= time.Duration(*j.Spec.ActiveDeadlineSeconds)*time.Second:
		st = failJob(st, pods, ReasonDeadlineExceeded, "Job was active longer than specified deadline", now)
	default:
		want := min(*j.Spec.Parallelism, *j.Spec.Completions-succeeded)
		if active >= want || failed > 0 && now.Before(st.last.Add(backoff(failed))) {
			return st
		}
		for ; active < want; active++ {
			p, err := w.JobPod(len(st.Pods))
			if err != nil {
				break // cannot happen: the first pods decoded from the same template
			}
			st.Pods = append(st.Pods, p)
		}
		st.Status.Active = active
	}
	return st
}

// failJob marks the Job failed and stops its running pods.
func failJob(st JobState, pods JobPods, reason, message string, now time.Time) JobState {
	st.Status.Conditions = append(st.Status.Conditions,
		condition(batchv1.JobFailureTarget, reason, message, now), condition(batchv1.JobFailed, reason, message, now))
	var keep []*corev1.Pod
	for _, p := range st.Pods {
		if phase, _, _ := pods.Phase(p.UID); phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			keep = append(keep, p)
		}
	}
	st.Pods, st.Status.Active = keep, 0
	return st
}

// ExpiresAt is when a finished Job's ttlSecondsAfterFinished removes it:
// that long after its Complete or Failed condition, as the
// TTL-after-finished controller counts; false without a TTL or unfinished.
func ExpiresAt(j *batchv1.Job, s batchv1.JobStatus) (time.Time, bool) {
	if j.Spec.TTLSecondsAfterFinished == nil {
		return time.Time{}, false
	}
	for _, c := range s.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second), true
		}
	}
	return time.Time{}, false
}

// ExpiredJob is the state of a run its TTL removed before (a podhost
// restart): no pods, the final status.
func ExpiredJob(first types.UID, status batchv1.JobStatus) JobState {
	return JobState{first: first, Status: status, Expired: true}
}

func backoff(failures int32) time.Duration {
	d := jobBackoffBase
	for i := int32(1); i < failures && d < jobBackoffMax; i++ {
		d *= 2
	}
	return min(d, jobBackoffMax)
}

func finished(s batchv1.JobStatus) bool {
	for _, c := range s.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func condition(typ batchv1.JobConditionType, reason, message string, now time.Time) batchv1.JobCondition {
	t := metaTime(now)
	return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: t, LastTransitionTime: t}
}

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// recordedAttempts are a Job's first pods and the later attempts that have
// a status (made before a podhost restart), up to the most a Job can make.
func recordedAttempts(w *manifest.Workload, pods JobPods) []*corev1.Pod {
	out := w.Pods
	most := int(*w.Job.Spec.Completions + *w.Job.Spec.BackoffLimit + *w.Job.Spec.Parallelism)
	for i := len(out); i < most; i++ {
		p, err := w.JobPod(i)
		if err != nil || !pods.Recorded(p.UID) {
			break
		}
		out = append(out, p)
	}
	return out
}
