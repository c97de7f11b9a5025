package cluster

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// TestAPIPodEvictionReported: a pod from the API server that podhost's
// eviction manager evicted, and one the node's shutdown terminated, show
// in the API as the kubelet reports them: Failed with reason Evicted or
// Terminated, the kubelet's message, and the shutdown's DisruptionTarget
// condition.
func TestAPIPodEvictionReported(t *testing.T) {
	dir := t.TempDir()
	evicted, shutdown := apiPod("evicted"), apiPod("shutdown")
	shutdown.UID = "api-uid-2"
	b := &fakeNode{ready: true}
	m, client := newTestMirrors(t, b, evicted, shutdown)
	m.a.opts.ClusterDir = dir
	const evictMsg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. "
	const shutdownMsg = "Pod was terminated in response to imminent node shutdown."
	local := func(p *corev1.Pod, st corev1.PodStatus) *corev1.Pod {
		l := p.DeepCopy()
		l.Annotations = map[string]string{wellknown.AnnotationConfigSource: filepath.Join(dir, "default_"+p.Name+".yaml")}
		l.Status = st
		return l
	}
	b.pods = []*corev1.Pod{
		local(evicted, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: evictMsg}),
		local(shutdown, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Terminated", Message: shutdownMsg,
			Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: shutdownMsg}}}),
	}
	m.reconcile(context.Background())
	got := apiPods(t, client)
	if st := got["evicted"].Status; st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != evictMsg {
		t.Errorf("the evicted pod in the API: %s %s %q", st.Phase, st.Reason, st.Message)
	}
	st := got["shutdown"].Status
	if st.Phase != corev1.PodFailed || st.Reason != "Terminated" || st.Message != shutdownMsg ||
		len(st.Conditions) != 1 || st.Conditions[0].Type != corev1.DisruptionTarget || st.Conditions[0].Reason != "TerminationByKubelet" {
		t.Errorf("the pod the shutdown terminated, in the API: %+v", st)
	}
	if got["shutdown"].UID != types.UID("api-uid-2") || got["evicted"].DeletionTimestamp != nil {
		t.Error("the API's pods were replaced or deleted")
	}
}
