package rolling

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
)

// ttlSecondsAfterFinished: the pods stay until that long after the Job
// finished, then go, and the run is not made again.
func TestPlanJobTTL(t *testing.T) {
	w := job(t, "  ttlSecondsAfterFinished: 30\n")
	ph := phases{}
	t0 := time.Unix(1e9, 0)
	st := PlanJob(w, JobState{}, ph, t0)
	ph[st.Pods[0].UID] = corev1.PodSucceeded
	if st = PlanJob(w, st, ph, t0); !finished(st.Status) || len(st.Pods) != 1 {
		t.Fatalf("after success: finished %v, %d pods", finished(st.Status), len(st.Pods))
	}
	if st = PlanJob(w, st, ph, t0.Add(29*time.Second)); st.Expired || len(st.Pods) != 1 {
		t.Fatalf("before the TTL: expired %v, %d pods", st.Expired, len(st.Pods))
	}
	for _, at := range []time.Duration{30 * time.Second, time.Hour} {
		if st = PlanJob(w, st, ph, t0.Add(at)); !st.Expired || len(st.Pods) != 0 || st.Status.Succeeded != 1 {
			t.Fatalf("at %v: expired %v, %d pods, status %+v", at, st.Expired, len(st.Pods), st.Status)
		}
	}
	if at, ok := ExpiresAt(job(t, "").Job, st.Status); ok {
		t.Errorf("a Job without a TTL expires at %v", at)
	}
}

// phaseStatuses fakes the status manager with pod phases.
type phaseStatuses map[types.UID]corev1.PodPhase

func (s phaseStatuses) Status(uid types.UID) (corev1.PodStatus, bool) {
	ph, ok := s[uid]
	return corev1.PodStatus{Phase: ph}, ok
}

func (s phaseStatuses) Changed() <-chan struct{} { return nil }

// jobStore fakes the state db's job records (no pod statuses stored).
type jobStore map[string]records.JobRecord

func (s jobStore) GetStatus(types.UID) (corev1.PodStatus, error) {
	return corev1.PodStatus{}, errors.New("not found")
}
func (s jobStore) ListJobs() ([]records.JobRecord, error) {
	var out []records.JobRecord
	for _, r := range s {
		out = append(out, r)
	}
	return out, nil
}
func (s jobStore) PutJob(r records.JobRecord) error { s[r.Key] = r; return nil }
func (s jobStore) DeleteJob(key string) error       { delete(s, key); return nil }

// A Job its TTL removed is not run again after a podhost restart (a new
// Controller, the pods' statuses gone); an edit of its template runs it
// again and forgets the record.
func TestControllerJobTTLAcrossRestart(t *testing.T) {
	w := job(t, "  ttlSecondsAfterFinished: 5\n")
	st, store := phaseStatuses{}, jobStore{}
	now := time.Unix(1e9, 0)
	c := New(st, store, nil)
	c.now = func() time.Time { return now }
	snap, busy := c.Step(snapshotOf(w))
	if len(snap.Pods) != 1 || !busy {
		t.Fatalf("first step: %d pods, busy %v", len(snap.Pods), busy)
	}
	st[snap.Pods[0].UID] = corev1.PodSucceeded
	if snap, busy = c.Step(snapshotOf(w)); len(snap.Pods) != 1 || !busy {
		t.Fatalf("finished, TTL to come: %d pods, busy %v (the controller must wake up for the TTL)", len(snap.Pods), busy)
	}
	now = now.Add(5 * time.Second)
	if snap, busy = c.Step(snapshotOf(w)); len(snap.Pods) != 0 || busy {
		t.Fatalf("TTL passed: %d pods, busy %v", len(snap.Pods), busy)
	}
	key := "Job default/batch"
	if rec, ok := store[key]; !ok || rec.FirstUID != w.Pods[0].UID || rec.Status.Succeeded != 1 {
		t.Fatalf("record: %+v, %v", rec, ok)
	}
	if got := c.Workloads()[0].Job.Status.Succeeded; got != 1 {
		t.Errorf("the removed Job reports %d succeeded, want its final status", got)
	}

	restarted := New(phaseStatuses{}, store, nil)
	if snap, _ = restarted.Step(snapshotOf(w)); len(snap.Pods) != 0 {
		t.Fatalf("after a restart the removed Job runs again: %d pods", len(snap.Pods))
	}
	objs, err := manifest.DecodeObjects("j.yaml", []byte(`apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  ttlSecondsAfterFinished: 5
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: img:2}]
`))
	if err != nil {
		t.Fatal(err)
	}
	edited := objs.Workloads[0]
	if snap, _ = restarted.Step(snapshotOf(edited)); len(snap.Pods) != 1 || snap.Pods[0].UID == w.Pods[0].UID {
		t.Fatalf("edited Job: %d pods", len(snap.Pods))
	}
	if _, ok := store[key]; ok {
		t.Error("the record outlives the run it was for")
	}
}

func (s jobStore) ListCronJobs() ([]records.CronJobRecord, error) { return nil, nil }
func (s jobStore) PutCronJob(records.CronJobRecord) error         { return nil }
func (s jobStore) DeleteCronJob(string) error                     { return nil }
