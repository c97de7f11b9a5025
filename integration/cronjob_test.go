//go:build integration

package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// cronJobsOf are the daemon's CronJob name and the Jobs it owns.
func (d *podhostd) cronJobsOf(name string) (*batchv1.CronJob, []batchv1.Job) {
	d.t.Helper()
	l, err := d.client.ListWorkloads(context.Background())
	if err != nil {
		d.t.Fatal(err)
	}
	var cj *batchv1.CronJob
	for i := range l.CronJobs {
		if l.CronJobs[i].Name == name {
			cj = &l.CronJobs[i]
		}
	}
	var jobs []batchv1.Job
	for _, j := range l.Jobs {
		for _, o := range j.OwnerReferences {
			if o.Kind == "CronJob" && o.Name == name {
				jobs = append(jobs, j)
			}
		}
	}
	return cj, jobs
}

// TestCronJobEveryMinute: a CronJob "*/1 * * * *" (Forbid, one successful
// Job kept) makes a Job named as the controller names it at the next
// minute, whose pod runs to completion in containerd; at the minute after,
// a second Job replaces the first in the history: the first Job is no
// longer listed and its pod's containers are gone from containerd.
func TestCronJobEveryMinute(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("tick.yaml", fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
spec:
  schedule: "*/1 * * * *"
  concurrencyPolicy: Forbid
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        metadata:
          labels: {app: tick}
        spec:
          restartPolicy: Never
          containers:
          - name: main
            image: %s
            command: ["sh", "-c", "echo done"]
`, env.ImageRef))
	pods := d.waitPodsOf("tick", 70*time.Second, "a first Succeeded pod", func(p []corev1.Pod) bool {
		return len(p) == 1 && p[0].Status.Phase == corev1.PodSucceeded
	})
	first := pods[0]
	if len(podContainers(t, string(first.UID))) == 0 {
		t.Fatalf("pod %s: no container in containerd", first.Name)
	}
	var firstJob string
	if err := waitFor(30*time.Second, func() (bool, error) {
		cj, jobs := d.cronJobsOf("tick")
		if cj == nil || cj.Status.LastScheduleTime == nil || len(jobs) != 1 || cj.Status.LastSuccessfulTime == nil {
			return false, fmt.Errorf("cronjob %v, jobs %d", cj != nil, len(jobs))
		}
		want := "tick-" + strconv.FormatInt(cj.Status.LastScheduleTime.Unix()/60, 10)
		if jobs[0].Name != want || !strings.HasPrefix(first.Name, want+"-") {
			return false, fmt.Errorf("job %s, pod %s, want the Job %s", jobs[0].Name, first.Name, want)
		}
		firstJob = jobs[0].Name
		return true, nil
	}); err != nil {
		t.Fatalf("the CronJob's status and Job: %v\n%s", err, d.logs())
	}
	d.waitPodsOf("tick", 70*time.Second, "the second run's pod Succeeded, the first run's gone", func(p []corev1.Pod) bool {
		return len(p) == 1 && p[0].UID != first.UID && p[0].Status.Phase == corev1.PodSucceeded
	})
	if err := waitFor(30*time.Second, func() (bool, error) {
		_, jobs := d.cronJobsOf("tick")
		if len(jobs) != 1 || jobs[0].Name == firstJob {
			return false, fmt.Errorf("%d jobs (first %s)", len(jobs), firstJob)
		}
		return len(podContainers(t, string(first.UID))) == 0, fmt.Errorf("the first run's containers are still in containerd")
	}); err != nil {
		t.Fatalf("history limit 1: %v\n%s", err, d.logs())
	}
}
