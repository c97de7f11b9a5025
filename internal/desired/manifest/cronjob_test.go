package manifest

import (
	"strings"
	"testing"
	"time"
)

const cronDoc = `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "*/5 * * * *"
  %s
  jobTemplate:
    metadata: {labels: {team: a}}
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
`

func TestCronJobDecode(t *testing.T) {
	objs, err := DecodeObjects("c.yaml", []byte(strings.Replace(cronDoc, "%s", "timeZone: Europe/Paris", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Workloads) != 1 || objs.Workloads[0].CronJob == nil {
		t.Fatalf("workloads = %+v", objs.Workloads)
	}
	w := objs.Workloads[0]
	cj := w.CronJob
	if cj.Spec.ConcurrencyPolicy != "Allow" || *cj.Spec.SuccessfulJobsHistoryLimit != 3 || *cj.Spec.FailedJobsHistoryLimit != 1 || *cj.Spec.Suspend {
		t.Errorf("defaults not applied: %+v", cj.Spec)
	}
	at := time.Date(2026, 11, 29, 13, 35, 0, 0, time.UTC)
	run, err := w.CronJobRun(at)
	if err != nil {
		t.Fatal(err)
	}
	j := run.Job
	if want := "tick-" + "29932655"; j.Name != want { // 2026-11-29T13:35Z / 60 s
		t.Errorf("job name = %q, want %q", j.Name, want)
	}
	if got := j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"]; got != "2026-11-29T14:35:00+01:00" {
		t.Errorf("scheduled annotation = %q", got)
	}
	if j.Labels["team"] != "a" || len(j.OwnerReferences) != 1 || j.OwnerReferences[0].Kind != "CronJob" || j.OwnerReferences[0].Name != "tick" {
		t.Errorf("labels %v owners %+v", j.Labels, j.OwnerReferences)
	}
	if len(run.Pods) != 1 || run.Pods[0].Labels["batch.kubernetes.io/job-name"] != j.Name {
		t.Errorf("pods = %+v", run.Pods)
	}
	sched, err := CronSchedule(cj)
	if err != nil {
		t.Fatal(err)
	}
	if next := sched.Next(at); !next.Equal(at.Add(5 * time.Minute)) {
		t.Errorf("next = %v", next)
	}
}

func TestCronJobRefused(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{`timeZone: Local`, `spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone`},
		{`timeZone: "Mars/Base"`, `spec.timeZone: Invalid value: "Mars/Base": unknown time zone Mars/Base`},
		{`timeZone: "../etc"`, `spec.timeZone: Invalid value: "../etc": unknown time zone ../etc`},
		{`concurrencyPolicy: Sometimes`, `spec.concurrencyPolicy: Unsupported value: "Sometimes"`},
		{`startingDeadlineSeconds: -1`, `spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0`},
		{`successfulJobsHistoryLimit: -1`, `spec.successfulJobsHistoryLimit: Invalid value: -1`},
		{`failedJobsHistoryLimit: 1000`, `spec.failedJobsHistoryLimit: Invalid value: 1000: must be between 0 and 100 on one node`},
	} {
		_, err := DecodeObjects("c.yaml", []byte(strings.Replace(cronDoc, "%s", tc.spec, 1)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.spec, err, tc.want)
		}
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"*/5 * * * *"`, `"CRON_TZ=UTC */5 * * * *"`, `spec.schedule: Invalid value: "CRON_TZ=UTC */5 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`},
		{`"*/5 * * * *"`, `"61 * * * *"`, `spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59)`},
		{`"*/5 * * * *"`, `""`, `spec.schedule: Required value`},
		{`name: tick`, `name: ` + strings.Repeat("a", 53), `metadata.name: Invalid value: "` + strings.Repeat("a", 53) + `": must be no more than 52 characters`},
		{`restartPolicy: Never`, `restartPolicy: Always`, `spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: "Always"`},
		{`containers: [{name: c, image: busybox}]`, `containers: [{name: c, image: busybox, bogus: 1}]`, `spec.jobTemplate.spec.template.spec.containers[0].bogus`},
	} {
		doc := strings.Replace(strings.Replace(cronDoc, "%s", "", 1), tc.from, tc.to, 1)
		_, err := DecodeObjects("c.yaml", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.to, err, tc.want)
		}
	}
}
