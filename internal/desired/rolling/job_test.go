package rolling

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
)

func job(t *testing.T, spec string) *manifest.Workload {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
%s  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: img:1}]
`, spec)
	objs, err := manifest.DecodeObjects("j.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return objs.Workloads[0]
}

// phases fakes JobPods.
type phases map[types.UID]corev1.PodPhase

func (p phases) Phase(uid types.UID) (corev1.PodPhase, int32, bool) {
	ph, ok := p[uid]
	return ph, 0, ok
}

func (p phases) Recorded(uid types.UID) bool { _, ok := p[uid]; return ok }

func lastCondition(s batchv1.JobStatus) batchv1.JobCondition {
	if len(s.Conditions) == 0 {
		return batchv1.JobCondition{}
	}
	return s.Conditions[len(s.Conditions)-1]
}

// backoffLimit 2: three pods fail, each replaced after the controller's
// backoff (10 s, then 20 s); the third failure fails the Job with
// BackoffLimitExceeded and no fourth pod is made.
func TestPlanJobBackoffLimit(t *testing.T) {
	w := job(t, "  backoffLimit: 2\n")
	ph := phases{}
	t0 := time.Unix(1e9, 0)
	st := PlanJob(w, JobState{}, ph, t0)
	if len(st.Pods) != 1 {
		t.Fatalf("first step: %d pods", len(st.Pods))
	}
	now := t0
	for try := 1; try <= 3; try++ {
		ph[st.Pods[len(st.Pods)-1].UID] = corev1.PodFailed
		st = PlanJob(w, st, ph, now)
		if try == 3 {
			break
		}
		if len(st.Pods) != try {
			t.Fatalf("try %d: a new pod at once, before the backoff", try)
		}
		wait := 10 * time.Second << (try - 1)
		if st = PlanJob(w, st, ph, now.Add(wait-time.Second)); len(st.Pods) != try {
			t.Fatalf("try %d: a new pod before %v", try, wait)
		}
		now = now.Add(wait)
		if st = PlanJob(w, st, ph, now); len(st.Pods) != try+1 {
			t.Fatalf("try %d: no new pod after %v", try, wait)
		}
	}
	c := lastCondition(st.Status)
	if c.Type != batchv1.JobFailed || c.Reason != "BackoffLimitExceeded" || st.Status.Failed != 3 || len(st.Pods) != 3 {
		t.Fatalf("after 3 failures: condition %s/%s, failed %d, %d pods", c.Type, c.Reason, st.Status.Failed, len(st.Pods))
	}
	if st = PlanJob(w, st, ph, now.Add(time.Hour)); len(st.Pods) != 3 {
		t.Fatalf("a failed Job made another pod")
	}
}

// completions 2, parallelism 1: one pod after the other; Complete.
func TestPlanJobCompletions(t *testing.T) {
	w := job(t, "  completions: 2\n")
	ph := phases{}
	now := time.Unix(1e9, 0)
	st := PlanJob(w, JobState{}, ph, now)
	ph[st.Pods[0].UID] = corev1.PodRunning
	if st = PlanJob(w, st, ph, now); len(st.Pods) != 1 {
		t.Fatalf("parallelism 1: %d pods", len(st.Pods))
	}
	ph[st.Pods[0].UID] = corev1.PodSucceeded
	if st = PlanJob(w, st, ph, now); len(st.Pods) != 2 {
		t.Fatalf("after the first success: %d pods", len(st.Pods))
	}
	ph[st.Pods[1].UID] = corev1.PodSucceeded
	st = PlanJob(w, st, ph, now)
	if c := lastCondition(st.Status); c.Type != batchv1.JobComplete || st.Status.Succeeded != 2 || st.Status.CompletionTime == nil {
		t.Fatalf("condition %s, succeeded %d", c.Type, st.Status.Succeeded)
	}
}

// activeDeadlineSeconds: the Job fails with DeadlineExceeded and its
// running pod is taken out.
func TestPlanJobDeadline(t *testing.T) {
	w := job(t, "  activeDeadlineSeconds: 5\n")
	ph := phases{}
	now := time.Unix(1e9, 0)
	st := PlanJob(w, JobState{}, ph, now)
	ph[st.Pods[0].UID] = corev1.PodRunning
	if st = PlanJob(w, st, ph, now.Add(4*time.Second)); len(st.Pods) != 1 || len(st.Status.Conditions) != 0 {
		t.Fatalf("before the deadline: %d pods, %v", len(st.Pods), st.Status.Conditions)
	}
	st = PlanJob(w, st, ph, now.Add(5*time.Second))
	if c := lastCondition(st.Status); c.Reason != "DeadlineExceeded" || len(st.Pods) != 0 {
		t.Fatalf("at the deadline: %s, %d pods", c.Reason, len(st.Pods))
	}
}

// After a podhost restart the Job's later attempts that have a status are
// found again: a Job that had failed twice does not start over.
func TestPlanJobRecoversAttempts(t *testing.T) {
	w := job(t, "  backoffLimit: 2\n")
	ph := phases{}
	for i := range 2 {
		p, err := w.JobPod(i)
		if err != nil {
			t.Fatal(err)
		}
		ph[p.UID] = corev1.PodFailed
	}
	st := PlanJob(w, JobState{}, ph, time.Unix(1e9, 0))
	if len(st.Pods) != 2 || st.Status.Failed != 2 {
		t.Fatalf("after a restart: %d pods, %d failed; want the 2 failed attempts", len(st.Pods), st.Status.Failed)
	}
}
