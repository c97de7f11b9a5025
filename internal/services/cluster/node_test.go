package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// staticNode is a Backend whose Node is n.
type staticNode struct {
	fakeNode
	n *corev1.Node
}

func (s *staticNode) Node(context.Context) (*corev1.Node, error) { return s.n.DeepCopy(), nil }

func podhostNode(ready corev1.ConditionStatus, transition time.Time) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelHostname: "n1"},
		CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))},
		Status: corev1.NodeStatus{
			Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.1.1"}},
			NodeInfo:  corev1.NodeSystemInfo{BootID: "b1", ContainerRuntimeVersion: "containerd://2.2.9"},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady",
				LastTransitionTime: metav1.NewTime(transition)}}}}
}

func TestRegisterCreatesThenReconcilesLabels(t *testing.T) {
	client := fake.NewClientset()
	b := &staticNode{n: podhostNode(corev1.ConditionTrue, time.Unix(2000, 0))}
	a := New(client, b, Options{NodeName: "n1", Logger: slog.New(slog.DiscardHandler)})
	if err := a.tryRegister(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !n.CreationTimestamp.IsZero() || n.Status.NodeInfo.BootID != "b1" || len(n.Status.Conditions) != 1 {
		t.Errorf("registered node %+v", n)
	}
	// Registered again with a new label: the existing Node gets it.
	b.n.Labels["extra"] = "1"
	if err := a.tryRegister(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, _ = client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if n.Labels["extra"] != "1" {
		t.Errorf("labels after re-registration: %v", n.Labels)
	}
}

func TestApplyStatusTransitionAndHeartbeat(t *testing.T) {
	t0, t1, now := time.Unix(1000, 0), time.Unix(2000, 0), time.Unix(3000, 0)
	api := podhostNode(corev1.ConditionTrue, t0).Status
	api.Conditions = append(api.Conditions, corev1.NodeCondition{Type: "NetworkUnavailable", Status: corev1.ConditionFalse})
	local := podhostNode(corev1.ConditionTrue, t1).Status
	next := api.DeepCopy()
	applyStatus(next, &local, now)
	ready := next.Conditions[conditionIndex(next.Conditions, corev1.NodeReady)]
	if !ready.LastTransitionTime.Time.Equal(t0) || !ready.LastHeartbeatTime.Time.Equal(now) {
		t.Errorf("same status: transition %v (want the API's %v), heartbeat %v", ready.LastTransitionTime, t0, ready.LastHeartbeatTime)
	}
	if conditionIndex(next.Conditions, "NetworkUnavailable") < 0 {
		t.Error("a condition set by another component was dropped")
	}
	if statusChanged(&api, next) {
		t.Error("a heartbeat alone counts as a change")
	}
	local = podhostNode(corev1.ConditionFalse, t1).Status
	applyStatus(next, &local, now)
	ready = next.Conditions[conditionIndex(next.Conditions, corev1.NodeReady)]
	if ready.Status != corev1.ConditionFalse || !ready.LastTransitionTime.Time.Equal(now) || !statusChanged(&api, next) {
		t.Errorf("Ready went False: %+v", ready)
	}
	// containerd did not answer: the runtime version reported last stays.
	local.NodeInfo.ContainerRuntimeVersion = ""
	applyStatus(next, &local, now)
	if next.NodeInfo.ContainerRuntimeVersion != "containerd://2.2.9" {
		t.Errorf("runtime version %q", next.NodeInfo.ContainerRuntimeVersion)
	}
}

func TestNodeStatusPatchReplacesAddresses(t *testing.T) {
	old := podhostNode(corev1.ConditionTrue, time.Unix(1, 0))
	next := old.DeepCopy()
	next.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.2.2.2"}}
	patch, err := nodeStatusPatch(old, next)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Status struct {
			Addresses []map[string]string `json:"addresses"`
		} `json:"status"`
	}
	if err := json.Unmarshal(patch, &m); err != nil {
		t.Fatal(err)
	}
	a := m.Status.Addresses
	if len(a) != 2 || a[0]["address"] != "10.2.2.2" || a[1]["$patch"] != "replace" {
		t.Errorf("patch %s: want the new addresses and a replace directive", patch)
	}
}

func TestUpdateNodeStatusOnChangeOrReportPeriod(t *testing.T) {
	client := fake.NewClientset()
	b := &staticNode{n: podhostNode(corev1.ConditionTrue, time.Unix(2000, 0))}
	a := New(client, b, Options{NodeName: "n1", Logger: slog.New(slog.DiscardHandler), StatusReport: time.Minute})
	if err := a.tryRegister(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := &nodeStatus{errs: newErrorLog(a.log)}
	patches := func() int {
		n := 0
		for _, act := range client.Actions() {
			if act.GetVerb() == "patch" && act.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	now := time.Unix(5000, 0)
	for i, step := range []struct {
		at    time.Duration
		ready corev1.ConditionStatus
		want  int
	}{
		{0, corev1.ConditionTrue, 1},                // first report
		{10 * time.Second, corev1.ConditionTrue, 1}, // nothing changed
		{20 * time.Second, corev1.ConditionFalse, 2},
		{30 * time.Second, corev1.ConditionFalse, 2},
		{90 * time.Second, corev1.ConditionFalse, 3}, // the report period passed
	} {
		b.n.Status.Conditions[0].Status = step.ready
		if err := a.updateNodeStatus(context.Background(), st, now.Add(step.at)); err != nil {
			t.Fatal(err)
		}
		if got := patches(); got != step.want {
			t.Errorf("step %d: %d status patches, want %d", i, got, step.want)
		}
	}
}

// A Node deleted from the cluster is registered again: the status patch
// fails, the next period finds it gone and creates it.
func TestNodeDeletedIsRegisteredAgain(t *testing.T) {
	client := fake.NewClientset()
	b := &staticNode{n: podhostNode(corev1.ConditionTrue, time.Unix(2000, 0))}
	a := New(client, b, Options{NodeName: "n1", Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	if err := a.tryRegister(ctx); err != nil {
		t.Fatal(err)
	}
	st := &nodeStatus{errs: newErrorLog(a.log)}
	now := time.Unix(5000, 0)
	if err := a.updateNodeStatus(ctx, st, now); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Nodes().Delete(ctx, "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	b.n.Status.Conditions[0].Status = corev1.ConditionFalse // a change: the status is sent
	if err := a.updateNodeStatus(ctx, st, now.Add(10*time.Second)); err == nil {
		t.Fatal("patching a deleted Node succeeded")
	}
	st.node = nil // as runNodeStatus does after an error
	if err := a.updateNodeStatus(ctx, st, now.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Errorf("the deleted Node was not registered again: %v", err)
	}
}

// The Node carries the kubelet API's port and, with NodeIP, that
// InternalIP in place of the daemon's.
func TestPublishKubeletEndpointAndNodeIP(t *testing.T) {
	a := New(nil, nil, Options{NodeName: "box", NodeIP: "127.0.0.1", KubeletPort: 10250})
	n := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "192.0.2.2"}, {Type: corev1.NodeHostName, Address: "box"}}}}
	a.publish(n)
	want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: "box"}}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 || !reflect.DeepEqual(n.Status.Addresses, want) {
		t.Errorf("published %+v %+v", n.Status.DaemonEndpoints, n.Status.Addresses)
	}
	var st corev1.NodeStatus
	applyStatus(&st, &n.Status, time.Now())
	if st.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("the status sent lost the port: %+v", st.DaemonEndpoints)
	}
}
