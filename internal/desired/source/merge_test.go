package source

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
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

// A ConfigMap or Secret a later source declares again is not used and is
// an error of that source naming the owner, not a silent drop: its pods
// will find the object missing (they read their own source's only).
func TestCombineReportsAnotherSourcesConfigData(t *testing.T) {
	from := func(src string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "db", Namespace: "default", Annotations: map[string]string{wellknown.AnnotationConfigSource: src}}
	}
	dir, url := "/etc/podhost/manifests/db.yaml", "https://config.example.com/pods.yaml"
	out := Combine(Snapshot{Secrets: []*corev1.Secret{{ObjectMeta: from(dir)}}},
		Snapshot{Secrets: []*corev1.Secret{{ObjectMeta: from(url)}}, ConfigMaps: []*corev1.ConfigMap{{ObjectMeta: from(url)}}})
	if len(out.Secrets) != 1 || out.Secrets[0].Annotations[wellknown.AnnotationConfigSource] != dir || len(out.ConfigMaps) != 1 {
		t.Fatalf("combined: secrets %+v configmaps %+v; want the dir's Secret and the URL's ConfigMap", out.Secrets, out.ConfigMaps)
	}
	want := url + ": duplicate Secret default/db, already defined in db.yaml (this source's is not used, and its pods do not read the other's)"
	if len(out.Errors) != 1 || out.Errors[0].File != url || out.Errors[0].Err.Error() != want {
		t.Errorf("errors %+v, want one of the URL: %q", out.Errors, want)
	}
}
