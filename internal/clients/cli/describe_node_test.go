package cli

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// nodePods: web (a sidecar and an app container), db with requests only,
// and a finished job, which describe node leaves out.
func nodePods(now time.Time) []*corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	rl := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	web := webPod()
	web.Status.StartTime = &metav1.Time{Time: now.Add(-2 * time.Hour)}
	web.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always,
		Resources: corev1.ResourceRequirements{Requests: rl("cpu", "50m", "memory", "64Mi"), Limits: rl("cpu", "100m")}}}
	web.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "100m", "memory", "128Mi"), Limits: rl("cpu", "500m", "memory", "256Mi")}
	db := webPod()
	db.Namespace, db.Name, db.Status.Phase = "infra", "db", corev1.PodPending
	db.Spec.Containers[0].Resources.Requests = rl("cpu", "1", "memory", "1Gi", "ephemeral-storage", "1Gi")
	job := webPod()
	job.Name, job.Status.Phase = "job", corev1.PodSucceeded
	job.Spec.Containers[0].Resources.Requests = rl("cpu", "2")
	return []*corev1.Pod{db, job, web}
}

func TestDescribeNodeOutput(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	n := testNode(now)
	var pods []corev1.Pod
	for _, p := range nodePods(now) {
		pods = append(pods, *p)
	}
	var out bytes.Buffer
	if err := describeNode(&out, n, nonTerminatedPods(pods), true, now); err != nil {
		t.Fatal(err)
	}
	// kubectl's lines: one tab writer, so each run of lines aligns; the
	// pods' requests and limits as the kubelet counts them (web: its
	// sidecar's and app's sums), their percentages of allocatable
	// truncated; the finished job left out.
	lines := strings.Split(out.String(), "\n")
	for _, want := range []string{
		"Name:               host1",
		"Roles:              <none>",
		"Labels:             kubernetes.io/hostname=host1",
		"                    kubernetes.io/os=linux",
		"                    tier=edge",
		"Annotations:        <none>",
		"CreationTimestamp:  Thu, 26 Feb 2026 08:00:00 +0000",
		"Taints:             <none>",
		"Unschedulable:      false",
		"  Type    Status  LastHeartbeatTime                 LastTransitionTime                Reason         Message",
		"  Ready   True    Sun, 01 Mar 2026 12:00:00 +0000   Sun, 01 Mar 2026 11:00:00 +0000   KubeletReady   podhost is posting ready status",
		"Addresses:",
		"  InternalIP:  10.0.0.5",
		"  Hostname:    host1",
		"  ephemeral-storage:  90Gi",
		"  Machine ID:                 m1",
		"  Container Runtime Version:  containerd://v2.1.4",
		"  Kubelet Version:            v0.3.0",
		"Non-terminated Pods:          (2 in total)",
		"  Namespace                   Name    CPU Requests  CPU Limits  Memory Requests  Memory Limits  Age",
		"  default                     web     150m (3%)     600m (15%)  192Mi (4%)       256Mi (6%)     120m",
		"  infra                       db      1 (25%)       0 (0%)      1Gi (25%)        0 (0%)         <unknown>",
		"Allocated resources:",
		"  (Total limits may be over 100 percent, i.e., overcommitted.)",
		"  Resource           Requests      Limits",
		"  cpu                1150m (28%)   600m (15%)",
		"  memory             1216Mi (29%)  256Mi (6%)",
		"  ephemeral-storage  1Gi (1%)      0 (0%)",
		"Events:              <none>",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "job") {
		t.Errorf("a Succeeded pod is listed:\n%s", out.String())
	}
	order := []string{"Name:", "Roles:", "Labels:", "Annotations:", "CreationTimestamp:", "Taints:", "Unschedulable:", "Conditions:", "Addresses:",
		"Capacity:", "Allocatable:", "System Info:", "Non-terminated Pods:", "Allocated resources:", "Events:"}
	for i := 1; i < len(order); i++ {
		if strings.Index(out.String(), "\n"+order[i]) < strings.Index(out.String(), order[i-1]) {
			t.Errorf("%s before %s", order[i], order[i-1])
		}
	}
}

// A node without allocatable (or with none of a resource) shows 0%, not
// a division by zero.
func TestShareWithoutAllocatable(t *testing.T) {
	reqs := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	if got := share(reqs, nil, corev1.ResourceCPU); got != "250m (0%)" {
		t.Errorf("no allocatable: %q", got)
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("3")}
	if got := share(reqs, alloc, corev1.ResourceCPU); got != "250m (25%)" {
		t.Errorf("cpu: %q", got)
	}
	if got := share(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2")}, alloc, corev1.ResourceMemory); got != "2 (66%)" {
		t.Errorf("memory, truncated: %q", got)
	}
}

// DescribeNode asks the daemon: the node without a name, each name that is
// its own, NotFound for the others; --show-events=false drops Events.
func TestDescribeNode(t *testing.T) {
	now := time.Now()
	d := &clienttest.FakeDaemon{NodeObject: testNode(now), PodList: nodePods(now), RuntimeStatus: api.RuntimeStatus{Healthy: true}}
	sock := serve(t, d)
	for _, tc := range []struct {
		o       GetOptions
		count   int // descriptions
		err     string
		events  bool
		missing []string
	}{
		{o: GetOptions{Namespace: "default"}, count: 1, events: true},
		{o: GetOptions{Namespace: "default", Names: []string{"host1"}, HideEvents: true}, count: 1},
		{o: GetOptions{Namespace: "default", Names: []string{"nope", "host1", "gone"}}, count: 1, events: true, missing: []string{"nope", "gone"}},
		{o: GetOptions{Namespace: "default", Names: []string{"nope"}}, missing: []string{"nope"}},
		{o: GetOptions{Namespace: "default", Names: []string{""}}, err: cmdutil.ErrEmptyName.Error()},
	} {
		var out bytes.Buffer
		tc.o.Socket = sock
		err := DescribeNode(context.Background(), tc.o, cmdutil.IOStreams{Out: &out, ErrOut: &out})
		got := out.String()
		if c := strings.Count(got, "Name:               host1\n"); c != tc.count || strings.Contains(got, "Events:") != tc.events ||
			tc.count > 0 && !strings.Contains(got, "Non-terminated Pods:          (2 in total)\n") {
			t.Errorf("%+v: %d descriptions, events %v:\n%s", tc.o, c, strings.Contains(got, "Events:"), got)
		}
		var want []string
		for _, name := range tc.missing {
			want = append(want, (&cmdutil.NotFoundError{Resource: "nodes", Name: name}).Error())
		}
		if tc.err != "" {
			want = []string{tc.err}
		}
		if msg := strings.Join(want, "\n"); (err == nil) != (msg == "") || err != nil && err.Error() != msg {
			t.Errorf("%+v: error %v, want %q", tc.o, err, msg)
		}
		var nf *cmdutil.NotFoundError
		if len(tc.missing) > 0 && !errors.As(err, &nf) {
			t.Errorf("%+v: %v holds no cmdutil.NotFoundError", tc.o, err)
		}
	}
}
