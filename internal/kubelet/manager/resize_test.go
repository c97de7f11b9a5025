package manager

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/kubelet/allocation"
	"github.com/podhost/podhost/internal/kubelet/resize"
)

func sizedPod(uid, cpu, mem string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = "web", "default", types.UID(uid)
	l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: l.DeepCopy(), Limits: l}}}
	return p
}

func (f *fakeWorkers) lastPod(t *testing.T) *corev1.Pod {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.updates) == 0 {
		t.Fatal("no worker update")
	}
	return f.updates[len(f.updates)-1].Pod
}

func memLimit(p *corev1.Pod) string { return p.Spec.Containers[0].Resources.Limits.Memory().String() }

// TestResizeAllocation: the allocatable is cpu 2, memory 1Gi (newTestManager).
func TestResizeAllocation(t *testing.T) {
	tests := []struct {
		name        string
		cpu, mem    string
		wantMem     string // the worker's pod (allocated)
		wantPending string // reason
		wantMsg     string
	}{
		{name: "fits: allocated", cpu: "500m", mem: "128Mi", wantMem: "128Mi"},
		{name: "beyond allocatable: Infeasible", cpu: "200m", mem: "2Gi", wantMem: "64Mi",
			wantPending: corev1.PodReasonInfeasible, wantMsg: "Node didn't have enough capacity: memory"},
		{name: "QoS class change: Infeasible", cpu: "200m", mem: "64Mi", wantMem: "64Mi",
			wantPending: corev1.PodReasonInfeasible, wantMsg: allocation.MsgQOSChange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, w, st, _, _ := newTestManager()
			old := sizedPod("u1", "200m", "64Mi")
			m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: old}}, nil)
			next := sizedPod("u1", tt.cpu, tt.mem)
			if tt.wantMsg == allocation.MsgQOSChange { // Guaranteed → Burstable
				next.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
			}
			m.handleUpdates(context.Background(), []podset.Update{{Op: podset.UPDATE, Pod: next}}, nil)
			got := w.lastPod(t)
			if memLimit(got) != tt.wantMem {
				t.Errorf("worker's memory limit %s, want %s", memLimit(got), tt.wantMem)
			}
			reason, msg := resize.Pending(got)
			if reason != tt.wantPending || !strings.HasPrefix(msg, tt.wantMsg) {
				t.Errorf("pending %q %q, want %q %q", reason, msg, tt.wantPending, tt.wantMsg)
			}
			ckpt := st.allocs["u1"].Containers["c"]
			if l := ckpt.Limits.Memory().String(); l != tt.wantMem {
				t.Errorf("checkpoint memory limit %s, want %s", l, tt.wantMem)
			}
		})
	}
}

// After a restart the checkpoint is the truth: a manifest whose resources
// differ from it is resized (admitted again), not taken as allocated.
func TestResizeAfterRestartStartsFromCheckpoint(t *testing.T) {
	m, w, st, _, _ := newTestManager()
	st.allocs["u1"] = resize.Checkpoint(sizedPod("u1", "200m", "64Mi"))
	m.alloc.Load()
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: sizedPod("u1", "200m", "2Gi")}}, map[types.UID]bool{"u1": true})
	got := w.lastPod(t)
	if memLimit(got) != "64Mi" {
		t.Fatalf("worker's memory limit %s, want the checkpoint's 64Mi", memLimit(got))
	}
	if r, _ := resize.Pending(got); r != corev1.PodReasonInfeasible {
		t.Fatalf("pending %q, want Infeasible", r)
	}
	ckpt := st.allocs["u1"].Containers["c"]
	if l := ckpt.Limits.Memory().String(); l != "64Mi" {
		t.Fatalf("checkpoint rewritten to %s", l)
	}
}

// A resize that does not fit next to the other pods is Deferred, and
// allocated at housekeeping once the other pod is gone.
func TestResizeDeferredThenAllocated(t *testing.T) {
	m, w, st, _, _ := newTestManager()
	other := sizedPod("u2", "1", "512Mi")
	other.Name = "other"
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: sizedPod("u1", "500m", "256Mi")}, {Op: podset.ADD, Pod: other}}, nil)
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.UPDATE, Pod: sizedPod("u1", "500m", "768Mi")}}, nil)
	if r, _ := resize.Pending(w.lastPod(t)); r != corev1.PodReasonDeferred {
		t.Fatalf("pending %q, want Deferred", r)
	}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.REMOVE, Pod: other}}, nil)
	m.retryDeferredResizes()
	got := w.lastPod(t)
	if r, _ := resize.Pending(got); r != "" || memLimit(got) != "768Mi" {
		t.Fatalf("after retry: pending %q, memory %s; want allocated 768Mi", r, memLimit(got))
	}
	ckpt := st.allocs["u1"].Containers["c"]
	if l := ckpt.Limits.Memory().String(); l != "768Mi" {
		t.Fatalf("checkpoint memory limit %s, want 768Mi", l)
	}
}
