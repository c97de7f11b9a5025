//go:build integration

package integration

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// workloadDoc is an apps/v1 workload of busybox pods labelled app=name;
// extraSpec goes under spec:, podExtra under the container.
func workloadDoc(kind, name string, replicas int, script, extraSpec, podExtra string) string {
	rep := ""
	if replicas >= 0 {
		rep = fmt.Sprintf("  replicas: %d\n", replicas)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: %s
metadata:
  name: %s
spec:
%s%s  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: %s
        command: ["sh", "-c", %q]
%s`, kind, name, rep, extraSpec, name, name, env.ImageRef, "trap 'exit 0' TERM; "+script+"; while true; do sleep 0.2; done", podExtra)
}

// podsOf lists the API's pods whose label app is app, by name.
func (d *podhostd) podsOf(app string) []corev1.Pod {
	d.t.Helper()
	l, err := d.client.ListPods(context.Background())
	if err != nil {
		d.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.Labels["app"] == app {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// waitPodsOf waits until cond holds for the pods labelled app=app.
func (d *podhostd) waitPodsOf(app string, timeout time.Duration, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	d.t.Helper()
	var last []corev1.Pod
	if err := waitFor(timeout, func() (bool, error) {
		last = d.podsOf(app)
		return cond(last), nil
	}); err != nil {
		var sum []string
		for i := range last {
			sum = append(sum, last[i].Name+": "+statusSummary(&last[i]))
		}
		d.t.Fatalf("pods of %s: %s: not reached in %v; last: %s\n%s", app, what, timeout, strings.Join(sum, "; "), d.logs())
	}
	return last
}

// taskRunning reports whether containerd runs the container's task: the
// host's view, not podhost's.
func taskRunning(t *testing.T, containerID string) bool {
	t.Helper()
	ctx := env.Context(context.Background())
	c, err := env.Client().LoadContainer(ctx, strings.TrimPrefix(containerID, "containerd://"))
	if err != nil {
		return false
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return false
	}
	st, err := task.Status(ctx)
	return err == nil && st.Status == client.Running
}

func nRunning(n int) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool {
		if len(pods) != n {
			return false
		}
		for i := range pods {
			if !allRunning(&pods[i]) {
				return false
			}
		}
		return true
	}
}

func nReady(n int) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool {
		if !nRunning(n)(pods) {
			return false
		}
		for i := range pods {
			if podReadySince(&pods[i]).IsZero() {
				return false
			}
		}
		return true
	}
}

// TestDeploymentReplicas: a Deployment of 3 replicas in the manifest dir
// runs 3 pods named as a cluster names them (NAME-<pod-template-hash>-<5
// characters>), labelled and owned as its ReplicaSet's, each with its
// containerd task running.
func TestDeploymentReplicas(t *testing.T) {
	d := newPodhostd(t)
	d.enableKubeAPI()
	d.start()
	doc := workloadDoc("Deployment", "web", 3, "true", "", "")
	objs, err := manifest.DecodeObjects("web.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	hash := manifest.ComputeHash(&objs.Workloads[0].Deployment.Spec.Template, nil)
	d.writeManifest("web.yaml", doc)
	pods := d.waitPodsOf("web", 90*time.Second, "3 running", nRunning(3))
	name := regexp.MustCompile(`^web-` + hash + `-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	for i := range pods {
		p := &pods[i]
		if !name.MatchString(p.Name) || p.Labels["pod-template-hash"] != hash {
			t.Errorf("pod %s (pod-template-hash %q): want web-%s-<5 chars>", p.Name, p.Labels["pod-template-hash"], hash)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ReplicaSet" || p.OwnerReferences[0].Name != "web-"+hash {
			t.Errorf("pod %s: ownerReferences %+v", p.Name, p.OwnerReferences)
		}
		if cs := containerStatus(p, "main"); cs == nil || !taskRunning(t, cs.ContainerID) {
			t.Errorf("pod %s: no running containerd task for main (%s)", p.Name, statusSummary(p))
		}
	}
	// The Deployment with its status: podhost get and the real kubectl.
	ready := regexp.MustCompile(`(?m)^web\s+3/3\s+3\s+3\s`)
	if err := waitFor(60*time.Second, func() (bool, error) { out, err := d.cli("get", "deployments"); return ready.MatchString(out), err }); err != nil {
		out, _ := d.cli("get", "deployments")
		t.Errorf("podhost get deployments: %v\n%s", err, out)
	}
	if _, err := exec.LookPath("kubectl"); err == nil {
		d.useKubectl()
		d.waitKubectl(60*time.Second, "web 3/3 ready", ready.MatchString, "get", "deployments")
	}
	// Scaled to 1: two pods go, their tasks with them.
	d.writeManifest("web.yaml", strings.Replace(doc, "replicas: 3", "replicas: 1", 1))
	left := d.waitPodsOf("web", 60*time.Second, "1 running", nRunning(1))
	if left[0].Name != pods[0].Name && left[0].Name != pods[1].Name && left[0].Name != pods[2].Name {
		t.Errorf("scaled down to %s, not one of the first replicas", left[0].Name)
	}
	for i := range pods {
		if pods[i].Name == left[0].Name {
			continue
		}
		uid := string(pods[i].UID)
		if err := waitFor(60*time.Second, func() (bool, error) { return len(podContainers(t, uid)) == 0, nil }); err != nil {
			t.Errorf("pod %s: containers left after the scale-down", pods[i].Name)
		}
	}
}

// TestStatefulSetOrderedStart: a StatefulSet's pods are NAME-0.. and
// start in order (OrderedReady): ordinal N's container is created only
// once N-1 is Ready; hostname and subdomain are the pod's identity.
func TestStatefulSetOrderedStart(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	probe := "        readinessProbe:\n          exec: {command: [cat, /tmp/ready]}\n          periodSeconds: 1\n"
	d.writeManifest("db.yaml", workloadDoc("StatefulSet", "db", 3, "sleep 2; touch /tmp/ready", "  serviceName: db\n", probe))
	pods := d.waitPodsOf("db", 120*time.Second, "3 running and ready", nReady(3))
	for i := range pods {
		p := &pods[i]
		if want := fmt.Sprintf("db-%d", i); p.Name != want || p.Spec.Hostname != want || p.Spec.Subdomain != "db" ||
			p.Labels["statefulset.kubernetes.io/pod-name"] != want {
			t.Errorf("pod %d: name %s hostname %q subdomain %q labels %v", i, p.Name, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
		}
		if i == 0 {
			continue
		}
		prevReady := podReadySince(&pods[i-1])
		created := containerCreatedAt(t, containerStatus(p, "main").ContainerID)
		t.Logf("%s Ready %s; %s created %s", pods[i-1].Name, prevReady.Format(time.RFC3339), p.Name, created.Format(time.RFC3339Nano))
		// Ready's time has a one-second resolution: created in the same second counts.
		prevCreated := containerCreatedAt(t, containerStatus(&pods[i-1], "main").ContainerID)
		if created.Before(prevReady) || created.Sub(prevCreated) < 2*time.Second {
			t.Errorf("%s created at %s, before %s was Ready (%s)", p.Name, created, pods[i-1].Name, prevReady)
		}
	}
}

// TestDeploymentRollingUpdate: a template edit of a 3-replica Deployment
// (maxSurge 1, maxUnavailable 0, a readiness probe 2 s after start) rolls
// out one pod at a time: each new pod's container is created only once the
// previous new pod is Ready, never more than 4 pods (terminating ones
// aside) run on the host, and never fewer than 3 are Ready.
func TestDeploymentRollingUpdate(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	probe := "        readinessProbe:\n          exec: {command: [cat, /tmp/ready]}\n          periodSeconds: 1\n"
	strategy := "  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}\n"
	v1 := workloadDoc("Deployment", "web", 3, "sleep 2; touch /tmp/ready", strategy, probe)
	d.writeManifest("web.yaml", v1)
	allReady := nReady(3)
	old := d.waitPodsOf("web", 120*time.Second, "3 ready", allReady)
	oldNames := map[string]bool{}
	for _, p := range old {
		oldNames[p.Name] = true
	}
	d.writeManifest("web.yaml", strings.Replace(v1, "sleep 2;", "sleep 2; echo v2;", 1))
	maxRunning, minReady := 0, 3
	var final []corev1.Pod
	if err := waitFor(240*time.Second, func() (bool, error) {
		pods := d.podsOf("web")
		running, ready, fresh := 0, 0, 0
		for i := range pods {
			// A pod taken out stops while the next one starts (as on a
			// cluster, a terminating pod counts for no bound): count the others.
			if cs := containerStatus(&pods[i], "main"); pods[i].DeletionTimestamp == nil && cs != nil && cs.ContainerID != "" && taskRunning(t, cs.ContainerID) {
				running++
			}
			if !podReadySince(&pods[i]).IsZero() && pods[i].DeletionTimestamp == nil {
				ready++
			}
			if !oldNames[pods[i].Name] {
				fresh++
			}
		}
		maxRunning, minReady = max(maxRunning, running), min(minReady, ready)
		final = pods
		return fresh == 3 && len(pods) == 3 && allReady(pods), nil
	}); err != nil {
		t.Fatalf("rollout not done: %v\n%s", err, d.logs())
	}
	t.Logf("during the rollout: at most %d pods running on the host, at least %d Ready", maxRunning, minReady)
	if maxRunning > 4 || minReady < 3 {
		t.Errorf("rollout ran up to %d pods (want at most 4) with as few as %d Ready (want 3)", maxRunning, minReady)
	}
	// One at a time: new pod i+1's container created after new pod i was Ready.
	slices.SortFunc(final, func(a, b corev1.Pod) int {
		return containerCreatedAt(t, containerStatus(&a, "main").ContainerID).Compare(containerCreatedAt(t, containerStatus(&b, "main").ContainerID))
	})
	for i := 1; i < len(final); i++ {
		created := containerCreatedAt(t, containerStatus(&final[i], "main").ContainerID)
		prevCreated := containerCreatedAt(t, containerStatus(&final[i-1], "main").ContainerID)
		if created.Before(podReadySince(&final[i-1])) || created.Sub(prevCreated) < 2*time.Second {
			t.Errorf("new pod %s created %s, previous new pod %s created %s and Ready %s: not one at a time",
				final[i].Name, created.Format(time.RFC3339Nano), final[i-1].Name, prevCreated.Format(time.RFC3339Nano), podReadySince(&final[i-1]))
		}
	}
}

// TestJobBackoffLimitExceeded: a Job whose pod always fails, backoffLimit
// 2: three pods run on the host, each replaced after the Job controller's
// backoff (10 s, then 20 s), then the Job is Failed with reason
// BackoffLimitExceeded (the daemon's workloads and `podhost get jobs`)
// and no fourth pod comes.
func TestJobBackoffLimitExceeded(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("batch.yaml", fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: batch
spec:
  backoffLimit: 2
  template:
    metadata:
      labels: {app: batch}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: %s
        command: ["sh", "-c", "echo trying; exit 1"]
`, env.ImageRef))
	var job batchv1.Job
	if err := waitFor(180*time.Second, func() (bool, error) {
		l, err := d.client.ListWorkloads(context.Background())
		if err != nil || len(l.Jobs) != 1 {
			return false, err
		}
		job = l.Jobs[0]
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("Job not Failed: %v; status %+v\n%s", err, job.Status, d.logs())
	}
	if c := job.Status.Conditions[len(job.Status.Conditions)-1]; c.Reason != "BackoffLimitExceeded" || job.Status.Failed != 3 {
		t.Fatalf("Job failed with %s (%s), %d failed pods; want BackoffLimitExceeded after 3", c.Reason, c.Message, job.Status.Failed)
	}
	pods := d.podsOf("batch")
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3 tries", len(pods))
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return containerCreatedAt(t, containerStatus(&a, "main").ContainerID).Compare(containerCreatedAt(t, containerStatus(&b, "main").ContainerID))
	})
	for i := range pods {
		cs := containerStatus(&pods[i], "main")
		if pods[i].Status.Phase != corev1.PodFailed || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 {
			t.Errorf("pod %s: %s, want Failed with exit code 1", pods[i].Name, statusSummary(&pods[i]))
			continue
		}
		if len(podContainers(t, string(pods[i].UID))) == 0 {
			t.Errorf("pod %s: no container in containerd", pods[i].Name)
		}
		if i == 0 {
			continue
		}
		// The controller's backoff: 10 s after the first failure, 20 s after the second (1 s of slack: API times are seconds).
		gap := containerCreatedAt(t, cs.ContainerID).Sub(containerStatus(&pods[i-1], "main").State.Terminated.FinishedAt.Time)
		if want := 10 * time.Second << (i - 1); gap < want-time.Second {
			t.Errorf("pod %s created %v after the previous one failed, want the %v backoff", pods[i].Name, gap, want)
		}
	}
	if out := d.mustCLI("get", "jobs"); !regexp.MustCompile(`(?m)^batch\s+Failed\s+0/1\s`).MatchString(out) {
		t.Errorf("podhost get jobs:\n%s", out)
	}
}
