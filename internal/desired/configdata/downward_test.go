package configdata

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDownwardAndProjectedPayload(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "web", UID: "u-1",
		Labels: map[string]string{"b": "2", "a": `x"y`}, Annotations: map[string]string{"note": "hi"}}}
	res := func(ref *corev1.ResourceFieldSelector) (string, error) { return "128", nil }
	fr := func(path string) *corev1.ObjectFieldSelector {
		return &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}
	}
	items := []corev1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: fr("metadata.name")},
		{Path: "ns", FieldRef: fr("metadata.namespace")},
		{Path: "uid", FieldRef: fr("metadata.uid"), Mode: ptr(int32(0o600))},
		{Path: "labels", FieldRef: fr("metadata.labels")},
		{Path: "note", FieldRef: fr("metadata.annotations['note']")},
		{Path: "mem", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.memory"}},
	}
	got, err := DownwardAPIPayload(pod, items, nil, res)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]File{
		"name": {[]byte("web"), 0o644}, "ns": {[]byte("prod"), 0o644}, "uid": {[]byte("u-1"), 0o600},
		"labels": {[]byte("a=\"x\\\"y\"\nb=\"2\""), 0o644}, "note": {[]byte("hi"), 0o644}, "mem": {[]byte("128"), 0o644},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}

	s := NewStore(nil)
	s.Replace([]*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "c"}, Data: map[string]string{"k": "v"}}},
		[]*corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "s"}, Data: map[string][]byte{"pw": []byte("p")}}})
	mode := int32(0o440)
	proj := &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Items: []corev1.KeyToPath{{Key: "pw", Path: "creds/pw"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: fr("metadata.name")}}}},
	}}
	pg, err := ProjectedPayload(s.For(pod), pod, proj, res)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pg, map[string]File{"k": {[]byte("v"), 0o440}, "creds/pw": {[]byte("p"), 0o440}, "name": {[]byte("web"), 0o440}}) {
		t.Errorf("projected %q", pg)
	}
	proj.Sources = append(proj.Sources, corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}})
	if _, err := ProjectedPayload(s.For(pod), pod, proj, res); err == nil || err.Error() != `sources[3]: secret "gone" not found` {
		t.Errorf("missing secret: %v", err)
	}
}
