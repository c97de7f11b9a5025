package rolling

import (
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
)

// statuses fakes the status manager: Ready pods, a Changed broadcast.
type statuses struct {
	mu      sync.Mutex
	ready   map[types.UID]bool
	changed chan struct{}
}

func (s *statuses) Status(uid types.UID) (corev1.PodStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.ready[uid]
	st := corev1.ConditionFalse
	if r {
		st = corev1.ConditionTrue
	}
	return corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}, ok
}

func (s *statuses) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *statuses) setReady(pods ...*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pods {
		s.ready[p.UID] = true
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

func snapshotOf(w *manifest.Workload) source.Snapshot {
	return source.Snapshot{Pods: w.Pods, Workloads: []*manifest.Workload{w}}
}

func receive(t *testing.T, out <-chan source.Snapshot) source.Snapshot {
	t.Helper()
	select {
	case s := <-out:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot passed on")
		return source.Snapshot{}
	}
}

// Run passes a first snapshot on as it is, holds a template change back
// to one new pod beside the old ones, and moves on when that pod is Ready.
func TestControllerRun(t *testing.T) {
	st := &statuses{ready: map[types.UID]bool{}, changed: make(chan struct{})}
	in, out := make(chan source.Snapshot), make(chan source.Snapshot)
	go New(st, nil, nil).Run(t.Context(), in, out)
	v1 := workload(t, "Deployment", 3, "img:1", "")
	in <- snapshotOf(v1)
	if got := receive(t, out); len(got.Pods) != 3 || got.Pods[0].UID != v1.Pods[0].UID {
		t.Fatalf("first snapshot: %d pods", len(got.Pods))
	}
	st.setReady(v1.Pods...)
	v2 := workload(t, "Deployment", 3, "img:2", "")
	in <- snapshotOf(v2)
	got := receive(t, out)
	if len(got.Pods) != 4 || got.Pods[0].UID != v2.Pods[0].UID {
		t.Fatalf("template change: %v, want the first new pod and the 3 old ones", podNames(State{Pods: got.Pods}))
	}
	st.setReady(v2.Pods[0])
	got = receive(t, out)
	if len(got.Pods) != 4 || got.Pods[1].UID != v2.Pods[1].UID {
		t.Fatalf("first new pod Ready: %v, want 2 new and 2 old", podNames(State{Pods: got.Pods}))
	}
}

// A workload's pod the sources refused (pod security, a name another file
// declares) is not passed on: Step never adds back what the snapshot left out.
func TestStepKeepsRefusedPodsOut(t *testing.T) {
	st := &statuses{ready: map[types.UID]bool{}, changed: make(chan struct{})}
	c := New(st, nil, nil)
	w := workload(t, "Deployment", 2, "img:1", "")
	snap := snapshotOf(w)
	snap.Pods = snap.Pods[1:] // the first one refused
	got, _ := c.Step(snap)
	if len(got.Pods) != 1 || got.Pods[0].UID != w.Pods[1].UID {
		t.Fatalf("passed %v, want only the pod the sources kept", podNames(State{Pods: got.Pods}))
	}
}

// Workloads reports the status a controller would: mid-rollout, 4 pods
// (3 old Ready, 1 new not yet), 1 updated, 3 ready and available.
func TestWorkloadsStatus(t *testing.T) {
	st := &statuses{ready: map[types.UID]bool{}, changed: make(chan struct{})}
	c := New(st, nil, nil)
	v1 := workload(t, "Deployment", 3, "img:1", "")
	c.Step(snapshotOf(v1))
	st.setReady(v1.Pods...)
	v2 := workload(t, "Deployment", 3, "img:2", "")
	c.Step(snapshotOf(v2))
	ws := c.Workloads()
	if len(ws) != 1 || ws[0].Deployment == nil {
		t.Fatalf("workloads %+v", ws)
	}
	s := ws[0].Deployment.Status
	if s.Replicas != 4 || s.UpdatedReplicas != 1 || s.ReadyReplicas != 3 || s.AvailableReplicas != 3 || ws[0].Deployment.CreationTimestamp.IsZero() {
		t.Errorf("status %+v (created %v), want 4 replicas, 1 updated, 3 ready and available", s, ws[0].Deployment.CreationTimestamp)
	}
	if ws[0].Deployment.Kind != "Deployment" || ws[0].Deployment.APIVersion != "apps/v1" {
		t.Errorf("type %v", ws[0].Deployment.TypeMeta)
	}
}
