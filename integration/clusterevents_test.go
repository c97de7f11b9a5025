//go:build integration

package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
)

// defaultServiceAccount creates the default ServiceAccount of namespace
// default, which a pod needs to be created (no kube-controller-manager
// here to make it).
func (c *clusterNode) defaultServiceAccount() {
	c.t.Helper()
	_, err := c.admin.CoreV1().ServiceAccounts("default").Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatal(err)
	}
}

// eventsOf are the cluster's Events about the object of UID uid.
func (c *clusterNode) eventsOf(ctx context.Context, uid types.UID) ([]corev1.Event, error) {
	l, err := c.admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(uid)).String()})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// TestClusterNodeConditionsAndEvents: the Node in the cluster carries the
// daemon's MemoryPressure and DiskPressure (its eviction manager's) beside
// Ready; the daemon's events about a static pod reach its mirror pod and
// those about a pod from the API server reach that pod (involvedObject
// the cluster's UID, source podhost on the node), a failing probe's
// repeats counted into one Event.
func TestClusterNodeConditionsAndEvents(t *testing.T) {
	c := newClusterNode(t)
	c.start()
	ctx := context.Background()
	local, err := c.client.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[corev1.NodeConditionType]corev1.ConditionStatus{}
	for _, cond := range local.Status.Conditions {
		want[cond.Type] = cond.Status
	}
	if _, ok := want[corev1.NodeMemoryPressure]; !ok || want[corev1.NodeDiskPressure] == "" {
		t.Fatalf("the daemon's Node has no pressure conditions: %+v", local.Status.Conditions)
	}
	c.poll(60*time.Second, "Node conditions as the daemon's", func(ctx context.Context) (bool, error) {
		n, err := c.admin.CoreV1().Nodes().Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := map[corev1.NodeConditionType]corev1.ConditionStatus{}
		for _, cond := range n.Status.Conditions {
			got[cond.Type] = cond.Status
		}
		for ty, st := range want {
			if got[ty] != st {
				return false, fmt.Errorf("%s is %q, the daemon's %q", ty, got[ty], st)
			}
		}
		return true, nil
	})

	// A static pod whose readiness probe always fails.
	c.writeManifest("probed.yaml", podManifest("probed", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
`, env.ImageRef)))
	p := c.waitPod("probed", 120*time.Second, "probed Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	var mirror *corev1.Pod
	c.poll(60*time.Second, "mirror pod of probed", func(ctx context.Context) (bool, error) {
		mirror, err = c.mirror(ctx, "probed")
		return err == nil && mirror.Annotations[corev1.MirrorPodAnnotationKey] != "", err
	})
	if mirror.UID == p.UID {
		t.Fatalf("the mirror pod has the static pod's UID %s", p.UID)
	}
	c.poll(120*time.Second, "the static pod's events on its mirror pod, Unhealthy counted", func(ctx context.Context) (bool, error) {
		evs, err := c.eventsOf(ctx, mirror.UID)
		if err != nil {
			return false, err
		}
		reasons := map[string]int{}
		var unhealthy int32
		for _, e := range evs {
			reasons[e.Reason]++
			if e.Source.Component != "podhost" || e.Source.Host != c.name || e.InvolvedObject.Name != "probed" {
				t.Fatalf("event %s: source %+v, object %+v", e.Name, e.Source, e.InvolvedObject)
			}
			if e.Reason == "Unhealthy" {
				unhealthy = e.Count
			}
		}
		if reasons["Unhealthy"] > 1 {
			t.Fatalf("Unhealthy is %d Events, want one counted", reasons["Unhealthy"])
		}
		return reasons["Started"] == 1 && unhealthy >= 3, fmt.Errorf("events so far: %v, Unhealthy count %d", reasons, unhealthy)
	})

	// A pod from the API server: its events go to it.
	core := c.admin.CoreV1()
	c.defaultServiceAccount()
	no, grace := false, int64(1)
	created, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-ev"},
		Spec: corev1.PodSpec{NodeName: c.name, AutomountServiceAccountToken: &no, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "c", Image: env.ImageRef, Command: []string{"sleep", "3600"}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.poll(120*time.Second, "the API pod's Started event", func(ctx context.Context) (bool, error) {
		evs, err := c.eventsOf(ctx, created.UID)
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if e.Reason == "Started" && e.InvolvedObject.Name == "api-ev" {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events", len(evs))
	})
	if err := core.Pods("default").Delete(ctx, "api-ev", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.removeManifest("probed.yaml")
}
