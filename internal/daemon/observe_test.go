package daemon

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/ops/metrics"
)

// fakeSync sets the status the test chose at each SyncPod.
type fakeSync struct {
	st   map[types.UID]corev1.PodStatus
	next corev1.PodStatus
}

func (f *fakeSync) SyncPod(_ context.Context, _ podworkers.UpdateType, pod *corev1.Pod, _ *podstate.Pod) (podworkers.SyncResult, error) {
	f.st[pod.UID] = f.next
	return podworkers.SyncResult{}, nil
}
func (f *fakeSync) SyncTerminatingPod(context.Context, *corev1.Pod, *podstate.Pod, int64) error {
	return nil
}
func (f *fakeSync) SyncTerminatingRuntimePod(context.Context, *podstate.Pod) error { return nil }
func (f *fakeSync) SyncTerminatedPod(context.Context, *corev1.Pod) error           { return nil }

type mapStatuses map[types.UID]corev1.PodStatus

func (m mapStatuses) Status(uid types.UID) (corev1.PodStatus, bool) { st, ok := m[uid]; return st, ok }

func running() corev1.PodStatus {
	return corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
}

func startCount(t *testing.T, m *metrics.Metrics) uint64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "podhost_pod_start_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// Pod start latency is observed once, when every container first runs; a
// pod already running at its first sync (adopted) is not measured.
func TestMeteredHandlerPodStart(t *testing.T) {
	st := mapStatuses{}
	f := &fakeSync{st: st}
	m := metrics.New()
	h := newMeteredHandler(f, m, st)
	pod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	}
	ctx := context.Background()
	f.next = corev1.PodStatus{Phase: corev1.PodPending}
	_, _ = h.SyncPod(ctx, podworkers.SyncPodCreate, pod("new"), nil)
	if n := startCount(t, m); n != 0 {
		t.Fatalf("observed %d starts while pending", n)
	}
	f.next = running()
	_, _ = h.SyncPod(ctx, podworkers.SyncPodSync, pod("new"), nil)
	_, _ = h.SyncPod(ctx, podworkers.SyncPodSync, pod("new"), nil)
	if n := startCount(t, m); n != 1 {
		t.Fatalf("observed %d starts, want 1", n)
	}
	st["adopted"] = running()
	_, _ = h.SyncPod(ctx, podworkers.SyncPodSync, pod("adopted"), nil)
	if n := startCount(t, m); n != 1 {
		t.Fatalf("adopted pod measured: %d starts", n)
	}
}
