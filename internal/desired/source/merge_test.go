package source

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConfigMaps and Secrets survive the merge of sources (first definition
// wins), so pods that reference them find them.
func TestCombineKeepsConfigData(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"k": "dir"}}
	cm2 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"k": "url"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default"}}
	out := Combine(Snapshot{ConfigMaps: []*corev1.ConfigMap{cm}, Secrets: []*corev1.Secret{sec}}, Snapshot{ConfigMaps: []*corev1.ConfigMap{cm2}})
	if len(out.ConfigMaps) != 1 || out.ConfigMaps[0].Data["k"] != "dir" || len(out.Secrets) != 1 {
		t.Fatalf("combined config data: %+v %+v", out.ConfigMaps, out.Secrets)
	}
}
