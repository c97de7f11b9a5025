package manager

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/desired/source"
)

// A changed ConfigMap wakes exactly the pods that reference it (same UID,
// no update of the pod); an unchanged snapshot wakes nobody.
func TestConfigMapChangeWakesReferencingPods(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	store := configdata.NewStore(nil)
	m.data = store
	user := hostPortPod("user", "u1", 0)
	user.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}}
	other := hostPortPod("other", "u2", 0)
	cm := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}, Data: map[string]string{"k": v}}
	}
	snap := source.Snapshot{Pods: []*corev1.Pod{user, other}, ConfigMaps: []*corev1.ConfigMap{cm("1")}}
	m.applySnapshot(context.Background(), snap, nil)
	if c, ok := store.For(&corev1.Pod{}).ConfigMap("default", "app"); !ok || c.Data["k"] != "1" {
		t.Fatal("store not filled before the pods start")
	}
	w.woken, w.updates = nil, nil
	m.applySnapshot(context.Background(), snap, nil)
	if len(w.woken) != 0 {
		t.Fatalf("unchanged snapshot woke %v", w.woken)
	}
	snap.ConfigMaps = []*corev1.ConfigMap{cm("2")}
	m.applySnapshot(context.Background(), snap, nil)
	if !slices.Equal(w.woken, []types.UID{"u1"}) || len(w.updates) != 0 {
		t.Fatalf("woken %v, updates %d; want u1 woken, no pod update", w.woken, len(w.updates))
	}
}
