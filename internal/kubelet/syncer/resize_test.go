package syncer

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// resizedPod is the next version of pod (a new manifest hash) with
// container a's resources changed.
func resizedPod(pod *corev1.Pod, r corev1.ResourceRequirements) *corev1.Pod {
	next := pod.DeepCopy()
	next.Annotations[wellknown.AnnotationConfigHash] = "h2"
	next.Spec.Containers[0].Resources = r
	return next
}

func condition(st corev1.PodStatus, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func TestSyncPodResizesInPlace(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	pod.Spec.Containers[0].Resources = resources("200m", "64Mi")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	id := w.containerID(t, "uid-1", "a")
	w.rt.calls = nil
	next := resizedPod(pod, resources("500m", "128Mi"))
	if _, err := syncOnce(t, w, next); err != nil {
		t.Fatal(err)
	}
	if want := []string{"resize a"}; !slices.Equal(w.rt.calls, want) {
		t.Fatalf("calls %q, want %q", w.rt.calls, want)
	}
	if got := w.containerID(t, "uid-1", "a"); got != id {
		t.Fatalf("container replaced: %s, was %s", got, id)
	}
	st := w.obs.last()
	cs := st.ContainerStatuses[0]
	if cs.Resources == nil || cs.Resources.Limits.Memory().Cmp(resource.MustParse("128Mi")) != 0 ||
		cs.AllocatedResources.Cpu().Cmp(resource.MustParse("500m")) != 0 {
		t.Fatalf("status resources %+v allocated %v", cs.Resources, cs.AllocatedResources)
	}
	if c := condition(st, corev1.PodResizeInProgress); c != nil {
		t.Fatalf("resize still in progress: %+v", c)
	}
	w.rt.calls = nil
	if _, err := syncOnce(t, w, next); err != nil || len(w.rt.calls) != 0 {
		t.Fatalf("second sync: calls %q, err %v (want nothing)", w.rt.calls, err)
	}
}

// A memory limit below the container's usage is not written (it would
// OOM-kill): the resize stays in progress with an error and a retry.
func TestSyncPodResizeRefusesMemoryBelowUsage(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	pod.Spec.Containers[0].Resources = resources("200m", "128Mi")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	w.host.memUsage = 100 << 20
	w.rt.calls = nil
	res, err := syncOnce(t, w, resizedPod(pod, resources("200m", "64Mi")))
	if err == nil || res.RequeueAfter == 0 {
		t.Fatalf("SyncPod = %+v, %v; want an error and a requeue", res, err)
	}
	if len(w.rt.calls) != 0 {
		t.Fatalf("calls %q, want none", w.rt.calls)
	}
	c := condition(w.obs.last(), corev1.PodResizeInProgress)
	if c == nil || c.Reason != corev1.PodReasonError || !strings.Contains(c.Message, "less than current memory usage") {
		t.Fatalf("PodResizeInProgress = %+v", c)
	}
	if lim := w.obs.last().ContainerStatuses[0].Resources.Limits.Memory(); lim.Cmp(resource.MustParse("128Mi")) != 0 {
		t.Fatalf("actuated memory limit %s, want 128Mi kept", lim)
	}
}

// resizePolicy RestartContainer for memory: only that container restarts,
// with the new resources.
func TestSyncPodResizeRestartPolicy(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a", "b")
	pod.Spec.Containers[0].Resources = resources("200m", "64Mi")
	pod.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	idA, idB := w.containerID(t, "uid-1", "a"), w.containerID(t, "uid-1", "b")
	if _, err := syncOnce(t, w, resizedPod(pod, resources("200m", "128Mi"))); err != nil {
		t.Fatal(err)
	}
	if w.rt.stopCount(idA) != 1 || w.rt.stopCount(idB) != 0 {
		t.Fatalf("stops: a %d, b %d; want 1, 0", w.rt.stopCount(idA), w.rt.stopCount(idB))
	}
	newA := w.containerID(t, "uid-1", "a")
	if newA == idA || w.containerID(t, "uid-1", "b") != idB {
		t.Fatalf("a %s (was %s), b %s (was %s): want only a replaced", newA, idA, w.containerID(t, "uid-1", "b"), idB)
	}
	if cs := w.obs.last().ContainerStatuses[0]; cs.RestartCount != 1 || cs.Resources.Limits.Memory().Cmp(resource.MustParse("128Mi")) != 0 {
		t.Fatalf("a: restartCount %d resources %+v, want 1 and 128Mi", cs.RestartCount, cs.Resources)
	}
}
