package cli

import (
	"bytes"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// kubectl get's columns for Deployments and Jobs.
func TestWorkloadTables(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	three, two := int32(3), int32(1)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-5 * time.Minute))}
	}
	l := &api.WorkloadList{
		Deployments: []appsv1.Deployment{{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{Replicas: &three},
			Status: appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, ReadyReplicas: 3, AvailableReplicas: 3}}},
		Jobs: []batchv1.Job{{ObjectMeta: meta("batch"), Spec: batchv1.JobSpec{Completions: &two},
			Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: now.Add(-4 * time.Minute)}, Failed: 3,
				Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}}}},
		CronJobs: []batchv1.CronJob{{ObjectMeta: meta("tick"), Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", Suspend: new(false)},
			Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "tick-1"}}, LastScheduleTime: &metav1.Time{Time: now.Add(-30 * time.Second)}}}},
	}
	for _, tc := range []struct {
		resource, want string
	}{
		{"deployments", "NAME   READY   UP-TO-DATE   AVAILABLE   AGE\nweb    3/3     1            3           5m\n"},
		{"jobs", "NAME    STATUS   COMPLETIONS   DURATION   AGE\nbatch   Failed   0/1           4m         5m\n"},
		{"cronjobs", "NAME   SCHEDULE      TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE\ntick   */1 * * * *   <none>     False     1        30s             5m\n"},
	} {
		var out, errOut bytes.Buffer
		err := printWorkloads(workloadRows(l, tc.resource, now), tc.resource, GetOptions{Namespace: "default"}, now, cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
		if err != nil || out.String() != tc.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", tc.resource, err, out.String(), tc.want)
		}
	}
	var out, errOut bytes.Buffer
	_ = printWorkloads(nil, "statefulsets", GetOptions{Namespace: "default"}, now, cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
	if errOut.String() != "No resources found in default namespace.\n" {
		t.Errorf("no statefulsets: %q", errOut.String())
	}
}
