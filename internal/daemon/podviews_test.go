package daemon

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/manager"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// fakeRevisions is the status manager: a status and its revision per pod.
type fakeRevisions map[types.UID]struct {
	st  corev1.PodStatus
	rev uint64
}

func (f fakeRevisions) Revision(uid types.UID) uint64 { return f[uid].rev }

func (f fakeRevisions) StatusRevision(uid types.UID) (corev1.PodStatus, uint64, bool) {
	s, ok := f[uid]
	return s.st, s.rev, ok
}

func (f fakeRevisions) set(uid types.UID, phase corev1.PodPhase) {
	f[uid] = struct {
		st  corev1.PodStatus
		rev uint64
	}{corev1.PodStatus{Phase: phase}, f[uid].rev + 1}
}

// A pod's API object is kept until its status, its spec object or its
// warnings change; a waiting pod's computed status is used as given.
func TestPodViewsRebuildOnlyChangedPods(t *testing.T) {
	st := fakeRevisions{}
	v := newPodViews(st, "node1")
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "ua"}}
	b := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "ub"}, Spec: corev1.PodSpec{NodeName: "elsewhere"}}
	waiting := corev1.PodStatus{Phase: corev1.PodPending, Reason: "WaitingForDependencies"}
	entries := []manager.PodEntry{{Pod: a}, {Pod: b}, {Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "uc"}}, Status: &waiting}}
	st.set("ua", corev1.PodRunning)

	first := v.build(entries)
	if first[0].Status.Phase != corev1.PodRunning || first[1].Status.Phase != corev1.PodPending || first[2].Status.Reason != waiting.Reason {
		t.Fatalf("phases %s %s %s", first[0].Status.Phase, first[1].Status.Phase, first[2].Status.Reason)
	}
	if first[0].Kind != "Pod" || first[0].APIVersion != "v1" || first[0].Spec.NodeName != "node1" || a.Spec.NodeName != "" || a.Status.Phase != "" {
		t.Fatalf("view %+v of the manager's %+v", first[0].TypeMeta, a)
	}
	if first[1].Spec.NodeName != "node1" { // the kubelet's applyDefaults: the manifest's nodeName is overwritten
		t.Errorf("nodeName %q, want the node's", first[1].Spec.NodeName)
	}
	second := v.build(entries)
	if second[0] != first[0] || second[1] != first[1] {
		t.Fatal("unchanged pods rebuilt")
	}
	if second[2] == first[2] {
		t.Fatal("a waiting pod's view was kept")
	}

	st.set("ub", corev1.PodRunning) // b's status changes
	a2 := a.DeepCopy()              // a's spec object is replaced
	entries = []manager.PodEntry{{Pod: a2, Warnings: []string{"w1"}}, {Pod: b}}
	third := v.build(entries)
	if third[0] == second[0] || third[1] == second[1] || third[1].Status.Phase != corev1.PodRunning {
		t.Fatal("changed pods not rebuilt")
	}
	if third[0].Annotations[wellknown.AnnotationWarnings] != "w1" || a2.Annotations != nil {
		t.Fatalf("warnings %v, manager's object %v", third[0].Annotations, a2.Annotations)
	}
	entries[0].Warnings = []string{"w2"}
	if fourth := v.build(entries); fourth[0] == third[0] || fourth[1] != third[1] {
		t.Fatal("a warnings change did not rebuild only that pod")
	}
	if len(v.views) != 2 {
		t.Fatalf("views kept for %d pods, want 2 (c is gone)", len(v.views))
	}
	// A waiting pod released as the same object, before its first status:
	// Pending, not still waiting.
	c := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c", UID: "uc"}}
	v.build([]manager.PodEntry{{Pod: c, Status: &waiting}})
	if got := v.build([]manager.PodEntry{{Pod: c}}); got[0].Status.Reason != "" || got[0].Status.Phase != corev1.PodPending {
		t.Fatalf("released pod shows %s %q, want Pending without the waiting reason", got[0].Status.Phase, got[0].Status.Reason)
	}
}

// A pod has a creationTimestamp from its first view (AGE is not
// <unknown> right after apply), kept while it waits, and its status'
// startTime once it has one (so a restart of podhost does not reset it).
func TestPodViewsCreationTimestamp(t *testing.T) {
	st := fakeRevisions{}
	v := newPodViews(st, "node1")
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	v.now = func() time.Time { return clock }
	waiting := corev1.PodStatus{Phase: corev1.PodPending}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "ua"}}
	if got := v.build([]manager.PodEntry{{Pod: p, Status: &waiting}})[0].CreationTimestamp; !got.Time.Equal(clock) {
		t.Fatalf("waiting pod: creationTimestamp %v, want %v", got, clock)
	}
	first := clock
	clock = clock.Add(time.Minute)
	if got := v.build([]manager.PodEntry{{Pod: p}})[0].CreationTimestamp; !got.Time.Equal(first) {
		t.Fatalf("pending pod without a status: %v, want the first view's %v", got, first)
	}
	started := metav1.NewTime(first.Add(-time.Hour))
	st["ua"] = struct {
		st  corev1.PodStatus
		rev uint64
	}{corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started}, 5}
	if got := v.build([]manager.PodEntry{{Pod: p}})[0].CreationTimestamp; !got.Equal(&started) {
		t.Fatalf("started pod: %v, want its startTime %v", got, started)
	}
}
