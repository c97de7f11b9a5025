package rolling

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/records"
)

func cronJob(t *testing.T, spec string) *manifest.Workload {
	t.Helper()
	doc := fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
%s  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: main, image: img:1}]
`, spec)
	objs, err := manifest.DecodeObjects("c.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return objs.Workloads[0]
}

// t0 is a Sunday, 00:00 UTC.
var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

func at(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

func runs(ms ...int) []CronRun {
	var out []CronRun
	for _, m := range ms {
		out = append(out, CronRun{Scheduled: at(m)})
	}
	return out
}

// PlanCron decides as the CronJob controller's syncCronJob and
// cleanupFinishedJobs do.
func TestPlanCron(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spec      string
		st        CronState
		done, bad []int // runs Complete / Failed (scheduled minute); others active
		now       time.Time
		create    int // minute of the run made; -1 none
		runs      []int
		reason    string // an event among those recorded
	}{
		{"before the first time", "  schedule: '*/5 * * * *'\n", CronState{Created: at(1)}, nil, nil, at(4), -1, nil, ""},
		{"at the first time", "  schedule: '*/5 * * * *'\n", CronState{Created: at(1)}, nil, nil, at(5), 5, []int{5}, "SuccessfulCreate"},
		{"not before creation", "  schedule: '*/5 * * * *'\n", CronState{Created: at(6)}, nil, nil, at(9), -1, nil, ""},
		{"already made", "  schedule: '*/5 * * * *'\n", CronState{Created: at(1), LastScheduleTime: at(5), Runs: runs(5)}, nil, nil, at(7), -1, []int{5}, ""},
		{"missed: only the most recent", "  schedule: '*/5 * * * *'\n", CronState{Created: at(1), LastScheduleTime: at(5), Runs: runs(5)}, []int{5}, nil, at(32), 30, []int{5, 30}, "SuccessfulCreate"},
		{"missed past the deadline", "  schedule: '*/5 * * * *'\n  startingDeadlineSeconds: 60\n", CronState{Created: at(1)}, nil, nil, at(32), -1, nil, ""},
		{"missed within the deadline", "  schedule: '*/5 * * * *'\n  startingDeadlineSeconds: 180\n", CronState{Created: at(1)}, nil, nil, at(32), 30, []int{30}, ""},
		{"too many missed", "  schedule: '* * * * *'\n", CronState{Created: at(0)}, nil, nil, at(200), 200, []int{200}, "TooManyMissedTimes"},
		{"suspended", "  schedule: '*/5 * * * *'\n  suspend: true\n", CronState{Created: at(1)}, nil, nil, at(5), -1, nil, ""},
		{"Forbid while active", "  schedule: '*/5 * * * *'\n  concurrencyPolicy: Forbid\n", CronState{Created: at(1), LastScheduleTime: at(5), Runs: runs(5)}, nil, nil, at(10), -1, []int{5}, "JobAlreadyActive"},
		{"Forbid once finished", "  schedule: '*/5 * * * *'\n  concurrencyPolicy: Forbid\n", CronState{Created: at(1), LastScheduleTime: at(5), Runs: runs(5)}, []int{5}, nil, at(10), 10, []int{5, 10}, ""},
		{"Allow runs alongside", "  schedule: '*/5 * * * *'\n", CronState{Created: at(1), LastScheduleTime: at(5), Runs: runs(5)}, nil, nil, at(10), 10, []int{5, 10}, ""},
		{"Replace removes the active", "  schedule: '*/5 * * * *'\n  concurrencyPolicy: Replace\n", CronState{Created: at(1), LastScheduleTime: at(10), Runs: runs(5, 10)}, []int{5}, nil, at(15), 15, []int{5, 15}, "SuccessfulDelete"},
		{"history limits", "  schedule: '*/5 * * * *'\n  successfulJobsHistoryLimit: 1\n  failedJobsHistoryLimit: 0\n", CronState{Created: at(1), LastScheduleTime: at(15), Runs: runs(5, 10, 15)}, []int{5, 10}, []int{15}, at(17), -1, []int{10}, "SuccessfulDelete"},
		{"default history limits", "  schedule: '*/5 * * * *'\n", CronState{Created: at(1), LastScheduleTime: at(25), Runs: runs(5, 10, 15, 20, 25)}, []int{5, 10, 15, 20}, []int{25}, at(27), -1, []int{10, 15, 20, 25}, ""},
		{"time zone", "  schedule: '0 1 * * *'\n  timeZone: Europe/Paris\n", CronState{Created: at(-60)}, nil, nil, at(0), 0, []int{0}, ""},
		{"never happens", "  schedule: '59 23 31 2 *'\n", CronState{Created: at(1)}, nil, nil, at(100), -1, nil, "InvalidSchedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := cronJob(t, tc.spec)
			sched, err := manifest.CronSchedule(w.CronJob)
			if err != nil {
				t.Fatal(err)
			}
			status := func(s time.Time) RunStatus {
				m := int(s.Sub(t0) / time.Minute)
				switch {
				case slices.Contains(tc.done, m):
					return RunStatus{Finished: true, Succeeded: true, CompletionTime: s.Add(time.Minute)}
				case slices.Contains(tc.bad, m):
					return RunStatus{Finished: true}
				}
				return RunStatus{}
			}
			p := PlanCron(w.CronJob, sched, tc.st, status, tc.now)
			wantCreate := time.Time{}
			if tc.create >= 0 {
				wantCreate = at(tc.create)
			}
			if !p.Create.Equal(wantCreate) {
				t.Errorf("create %v, want %v", p.Create, wantCreate)
			}
			var got []int
			for _, r := range p.State.Runs {
				got = append(got, int(r.Scheduled.Sub(t0)/time.Minute))
			}
			if !slices.Equal(got, tc.runs) {
				t.Errorf("runs %v, want %v", got, tc.runs)
			}
			if tc.create >= 0 && !p.State.LastScheduleTime.Equal(at(tc.create)) {
				t.Errorf("lastScheduleTime %v", p.State.LastScheduleTime)
			}
			if len(tc.done) > 0 && !p.State.LastSuccessfulTime.Equal(at(slices.Max(tc.done)+1)) {
				t.Errorf("lastSuccessfulTime %v", p.State.LastSuccessfulTime)
			}
			if tc.reason != "" && !slices.ContainsFunc(p.Events, func(e CronEvent) bool { return e.Reason == tc.reason }) {
				t.Errorf("events %+v: want %s", p.Events, tc.reason)
			}
		})
	}
}

// cronStore fakes the state db's cronjob records.
type cronStore struct {
	jobStore
	crons map[string]records.CronJobRecord
}

func (s cronStore) ListCronJobs() ([]records.CronJobRecord, error) {
	var out []records.CronJobRecord
	for _, r := range s.crons {
		out = append(out, r)
	}
	return out, nil
}
func (s cronStore) PutCronJob(r records.CronJobRecord) error { s.crons[r.Key] = r; return nil }
func (s cronStore) DeleteCronJob(key string) error           { delete(s.crons, key); return nil }

// The controller runs a CronJob's Jobs as Jobs from files: their pods are
// passed on (the CronJob's own checked pods are not), a run that
// succeeded is kept in history and, after a podhost restart (a new
// Controller, the record stored), neither made again nor lost.
func TestControllerCronJobAcrossRestart(t *testing.T) {
	w := cronJob(t, "  schedule: '* * * * *'\n  concurrencyPolicy: Forbid\n  successfulJobsHistoryLimit: 1\n")
	st, store := phaseStatuses{}, cronStore{jobStore{}, map[string]records.CronJobRecord{}}
	now := at(0).Add(30 * time.Second)
	c := New(st, store, nil)
	c.now = func() time.Time { return now }
	snap, _ := c.Step(snapshotOf(w))
	if len(snap.Pods) != 0 {
		t.Fatalf("before the first schedule time: %d pods passed on", len(snap.Pods))
	}
	if !c.wake.Equal(at(1)) {
		t.Errorf("wake %v, want %v", c.wake, at(1))
	}
	now = at(1).Add(time.Second)
	snap, busy := c.Step(snapshotOf(w))
	if len(snap.Pods) != 1 || !busy || snap.Pods[0].Labels["batch.kubernetes.io/job-name"] != manifest.CronJobName("tick", at(1)) {
		t.Fatalf("at the schedule time: pods %v busy %v", snap.Pods, busy)
	}
	first := snap.Pods[0]
	st[first.UID] = corev1.PodSucceeded
	if snap, busy = c.Step(snapshotOf(w)); len(snap.Pods) != 1 || !busy {
		t.Fatalf("succeeded: %d pods, busy %v (the CronJob learns it at the next Step)", len(snap.Pods), busy)
	}
	if snap, busy = c.Step(snapshotOf(w)); len(snap.Pods) != 1 || busy {
		t.Fatalf("succeeded, next Step: %d pods, busy %v", len(snap.Pods), busy)
	}
	ws := c.Workloads()
	var cj *manifest.Workload
	for _, x := range ws {
		if x.CronJob != nil {
			cj = x
		}
	}
	if cj == nil || cj.CronJob.Status.LastScheduleTime == nil || !cj.CronJob.Status.LastScheduleTime.Time.Equal(at(1)) ||
		len(cj.CronJob.Status.Active) != 0 || cj.CronJob.Status.LastSuccessfulTime == nil || len(ws) != 2 {
		t.Fatalf("workloads %d, cronjob status %+v", len(ws), cj)
	}
	// A restart later in the same minute: the run is not made again.
	c = New(st, store, nil)
	c.now = func() time.Time { return now.Add(10 * time.Second) }
	for range 2 { // the first Step learns the Jobs' states
		snap, _ = c.Step(snapshotOf(w))
	}
	if len(snap.Pods) != 1 || snap.Pods[0].UID != first.UID {
		t.Fatalf("after a restart: pods %v, want the first run's", snap.Pods)
	}
	// The next minute: a second run; history 1 keeps only it once it succeeded.
	c.now = func() time.Time { return at(2).Add(time.Second) }
	snap, _ = c.Step(snapshotOf(w))
	if len(snap.Pods) != 2 {
		t.Fatalf("second run: %d pods", len(snap.Pods))
	}
	second := snap.Pods[1]
	st[second.UID] = corev1.PodSucceeded
	c.Step(snapshotOf(w))
	if snap, _ = c.Step(snapshotOf(w)); len(snap.Pods) != 1 || snap.Pods[0].UID != second.UID {
		t.Fatalf("history 1: pods %v, want the second run's only", snap.Pods)
	}
	if r := store.crons["CronJob default/tick"]; len(r.Runs) != 1 || !r.Runs[0].Scheduled.Equal(at(2)) || r.Runs[0].FirstUID != second.UID {
		t.Fatalf("record %+v", r)
	}
	// The CronJob goes: its record goes.
	c.Step(source.Snapshot{})
	if len(store.crons) != 0 {
		t.Fatalf("records left: %v", store.crons)
	}
}
