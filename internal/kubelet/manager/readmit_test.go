package manager

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/status"
)

func memoryPod(uid, memory string) *corev1.Pod {
	p := hostPortPod("web", uid, 0)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}
	return p
}

// A rejected pod edited in a way that keeps its UID (resources, labels)
// arrives as an UPDATE: admission runs again, as the kubelet admits the
// edited static pod (a new pod there). Still too big, it stays rejected
// with the new reason; fitting, it starts and its Failed status is gone.
func TestUpdateOfRejectedPodIsAdmittedAgain(t *testing.T) {
	m, w, st, _, _ := newTestManager()
	sm := m.statuses.(*status.Manager)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: memoryPod("u1", "64Gi")}}, nil)
	if m.IsDesired("u1") || len(w.updates) != 0 {
		t.Fatalf("64Gi admitted on a 1Gi node: desired=%v updates=%d", m.IsDesired("u1"), len(w.updates))
	}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.UPDATE, Pod: memoryPod("u1", "2Gi")}}, nil)
	if got, _ := sm.Status("u1"); m.IsDesired("u1") || got.Reason != "OutOfmemory" || len(w.updates) != 0 {
		t.Fatalf("2Gi: desired=%v status=%+v updates=%d", m.IsDesired("u1"), got, len(w.updates))
	}
	sm.Flush()
	fixed := memoryPod("u1", "64Mi")
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.UPDATE, Pod: fixed}}, nil)
	if !m.IsDesired("u1") {
		t.Fatal("the fixed pod was not admitted")
	}
	if len(w.updates) != 1 || w.updates[0].Type != podworkers.SyncPodCreate || w.updates[0].Pod.UID != "u1" {
		t.Fatalf("worker updates %+v, want one create", w.updates)
	}
	if got, ok := sm.Status("u1"); ok && got.Phase == corev1.PodFailed {
		t.Fatalf("the re-admitted pod keeps its rejection: %+v", got)
	}
	if _, ok := st.allocs["u1"]; !ok {
		t.Fatal("no allocation checkpoint for the re-admitted pod")
	}
	if pods := m.Pods(); len(pods) != 1 || pods[0].Pod != fixed {
		t.Fatalf("Pods() = %+v, want the fixed pod once", pods)
	}
}

// Admission matches nodeSelector against the node's labels (the kubelet's
// NodeAffinity predicate), with the kubelet's reason and message.
func TestAdmissionChecksNodeSelector(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	m.nodeName, m.nodeLabels = "edge-1", map[string]string{"zone": "a"}
	sm := m.statuses.(*status.Manager)
	a, b := hostPortPod("a", "u1", 0), hostPortPod("b", "u2", 0)
	a.Spec.NodeSelector, b.Spec.NodeSelector = map[string]string{"zone": "a"}, map[string]string{"zone": "b"}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: a}, {Op: podset.ADD, Pod: b}}, nil)
	if !m.IsDesired("u1") || m.IsDesired("u2") || len(w.updates) != 1 {
		t.Fatalf("desired u1=%v u2=%v, %d updates", m.IsDesired("u1"), m.IsDesired("u2"), len(w.updates))
	}
	if got, _ := sm.Status("u2"); got.Phase != corev1.PodFailed || got.Reason != "NodeAffinity" ||
		got.Message != "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" {
		t.Fatalf("status %+v", got)
	}
}

// Options.Admit runs first (the eviction manager's refusal under
// pressure): its reason and message become the pod's Failed status.
func TestAdmissionFirstHandler(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	sm := m.statuses.(*status.Manager)
	m.admitFirst = refuseAll{admission.Result{Reason: "Evicted", Message: "The node had condition: [DiskPressure]. "}}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: memoryPod("u1", "64Mi")}}, nil)
	got, _ := sm.Status("u1")
	if m.IsDesired("u1") || len(w.updates) != 0 || got.Phase != corev1.PodFailed || got.Reason != "Evicted" ||
		got.Message != "Pod was rejected: The node had condition: [DiskPressure]. " {
		t.Fatalf("desired=%v updates=%d status=%+v", m.IsDesired("u1"), len(w.updates), got)
	}
}

type refuseAll struct{ res admission.Result }

func (r refuseAll) Admit(*corev1.Pod) admission.Result { return r.res }
