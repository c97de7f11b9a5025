package cluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestEventsReachTheClusterPods: the daemon's events about a static pod
// go to its mirror pod (the mirror's UID), about a pod from the API server
// to that pod (same UID), about the node to the Node; events about a pod
// the cluster does not hold, or another pod of the same name, are dropped;
// one about a pod whose mirror pod comes later waits for it; repeats are
// counted into one Event by the recorder's correlator.
func TestEventsReachTheClusterPods(t *testing.T) {
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "mirror-uid",
		Annotations: map[string]string{AnnotationMirror: "h1"}}, Spec: corev1.PodSpec{NodeName: "n1"}}
	apiPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "api-uid"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	ev := func(kind, name string, uid types.UID, reason string) *corev1.Event {
		return &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "default", Name: name, UID: uid, FieldPath: "spec.containers{c}"},
			Type: corev1.EventTypeNormal, Reason: reason, Message: reason + " " + name}
	}
	b := &fakeNode{ready: true, events: []*corev1.Event{
		ev("Pod", "web", "local-web", "Started"), ev("Pod", "web", "local-web", "Started"),
		ev("Pod", "late", "local-late", "Pulled"), // before its mirror pod exists
		ev("Pod", "api", "api-uid", "Pulled"),
		ev("Pod", "api", "other-uid", "Stale"), ev("Pod", "gone", "x", "Gone"),
		{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"}, Type: corev1.EventTypeWarning, Reason: "EvictionThresholdMet", Message: "m"},
	}}
	m, client := newTestMirrors(t, b, mirror, apiPod)
	m.a.setPodLister(m.lister)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.a.runEvents(ctx)
	late := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "default", UID: "late-mirror-uid",
		Annotations: map[string]string{AnnotationMirror: "h2"}}, Spec: corev1.PodSpec{NodeName: "n1"}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got map[string]corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got = map[string]corev1.Event{}
		for _, e := range l.Items {
			got[e.Reason+"/"+e.InvolvedObject.Name] = e
		}
		return len(got) == 4 && got["Started/web"].Count == 2, nil
	})
	if err != nil {
		t.Fatalf("events in the cluster: %+v (%v)", got, err)
	}
	for reason, want := range map[string]types.UID{"Started/web": "mirror-uid", "Pulled/api": "api-uid", "EvictionThresholdMet/n1": "n1",
		"Pulled/late": "late-mirror-uid"} {
		e := got[reason]
		if e.InvolvedObject.UID != want || e.Source.Component != EventComponent || e.Source.Host != "n1" {
			t.Errorf("%s: involvedObject %+v, source %+v: want UID %s", reason, e.InvolvedObject, e.Source, want)
		}
	}
	if got["Started/web"].InvolvedObject.FieldPath != "spec.containers{c}" {
		t.Errorf("field path lost: %+v", got["Started"].InvolvedObject)
	}
}

// ClusterPod: nothing known before the watch of the node's pods synced,
// then the cluster's pod of a name, or none.
func TestClusterPod(t *testing.T) {
	apiPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "api-uid"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	m, _ := newTestMirrors(t, &fakeNode{ready: true}, apiPod)
	if p, known := m.a.ClusterPod("default", "api"); p != nil || known {
		t.Fatalf("before the watch: %v %v", p, known)
	}
	m.a.setPodLister(m.lister)
	if p, known := m.a.ClusterPod("default", "api"); p == nil || p.UID != "api-uid" || !known {
		t.Errorf("default/api: %v %v", p, known)
	}
	if p, known := m.a.ClusterPod("default", "other"); p != nil || !known {
		t.Errorf("default/other: %v %v", p, known)
	}
}
