//go:build integration

package integration

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// jobFinished returns the daemon's Job name once it has a true Complete
// or Failed condition.
func (d *podhostd) jobFinished(name string) func() (bool, error) {
	return func() (bool, error) {
		l, err := d.client.ListWorkloads(context.Background())
		if err != nil {
			return false, err
		}
		for _, j := range l.Jobs {
			if j.Name == name && j.Status.Succeeded == 1 {
				for _, c := range j.Status.Conditions {
					if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
						return true, nil
					}
				}
			}
		}
		return false, nil
	}
}

// TestJobTTLAfterFinished: a Job with ttlSecondsAfterFinished: 3 runs its
// pod to completion; about 3 s later the pod is gone from podhost and its
// containers from containerd (the host's view), while the Job, still
// declared by its file, stays listed Complete. After a podhost restart it
// is not run again: the Job is reported with its final status and no pod.
func TestJobTTLAfterFinished(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("ttl.yaml", fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: ttl
spec:
  ttlSecondsAfterFinished: 3
  template:
    metadata:
      labels: {app: ttl}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: %s
        command: ["sh", "-c", "echo done"]
`, env.ImageRef))
	pods := d.waitPodsOf("ttl", 120*time.Second, "one Succeeded pod", func(p []corev1.Pod) bool {
		return len(p) == 1 && p[0].Status.Phase == corev1.PodSucceeded
	})
	uid := string(pods[0].UID)
	if len(podContainers(t, uid)) == 0 {
		t.Fatalf("pod %s: no container in containerd", pods[0].Name)
	}
	if err := waitFor(60*time.Second, d.jobFinished("ttl")); err != nil {
		t.Fatalf("Job not Complete: %v\n%s", err, d.logs())
	}
	done := time.Now()
	if err := waitFor(120*time.Second, func() (bool, error) {
		return len(d.podsOf("ttl")) == 0 && len(podContainers(t, uid)) == 0, nil
	}); err != nil {
		t.Fatalf("the finished Job's pod outlived its TTL: %v\n%s", err, d.logs())
	}
	if took := time.Since(done); took < 2*time.Second {
		t.Errorf("pod removed %v after the Job was seen Complete, before its 3 s TTL", took)
	}
	if ok, err := d.jobFinished("ttl")(); !ok {
		t.Fatalf("the Job is no longer listed Complete after its TTL: %v", err)
	}

	d.stop(syscall.SIGTERM, 30*time.Second)
	d.start()
	if err := waitFor(60*time.Second, d.jobFinished("ttl")); err != nil {
		t.Fatalf("after a restart the Job is not reported with its final status: %v\n%s", err, d.logs())
	}
	if p := d.podsOf("ttl"); len(p) != 0 {
		t.Fatalf("after a restart the removed Job runs again: %d pods (%s)", len(p), statusSummary(&p[0]))
	}
}
