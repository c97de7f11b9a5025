package configdata

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cm(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: data}
}

func TestStoreReplaceReportsChanges(t *testing.T) {
	s := NewStore(nil)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "s"}, Data: map[string][]byte{"k": []byte("v")}}
	if got := s.Replace([]*corev1.ConfigMap{cm("a", map[string]string{"k": "1"}), cm("b", nil)}, []*corev1.Secret{sec}); len(got) != 3 {
		t.Fatalf("first replace: %v", got)
	}
	got := s.Replace([]*corev1.ConfigMap{cm("a", map[string]string{"k": "2"})}, []*corev1.Secret{sec})
	want := []Ref{{ConfigMap, "default", "a"}, {ConfigMap, "default", "b"}}
	if len(got) != 2 || (!reflect.DeepEqual(got, want) && !reflect.DeepEqual(got, []Ref{want[1], want[0]})) {
		t.Errorf("changed %v, want %v", got, want)
	}
	if c, ok := s.For(&corev1.Pod{}).ConfigMap("default", "a"); !ok || c.Data["k"] != "2" {
		t.Error("a not updated")
	}
	if _, ok := s.For(&corev1.Pod{}).ConfigMap("default", "b"); ok {
		t.Error("b not removed")
	}
}

func TestIndexAndPodRefs(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u1"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}}},
			Env: []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}}},
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}}}}},
	}}
	if got := PodRefs(pod); !reflect.DeepEqual(got, []Ref{{ConfigMap, "default", "a"}, {Secret, "default", "s"}}) {
		t.Errorf("refs %v", got)
	}
	x := NewIndex()
	x.Set(pod)
	if got := x.Pods([]Ref{{Secret, "default", "s"}}); len(got) != 1 || got[0] != "u1" {
		t.Errorf("pods %v", got)
	}
	if got := x.Pods([]Ref{{Secret, "other", "s"}}); len(got) != 0 {
		t.Errorf("other namespace matched: %v", got)
	}
	x.Delete("u1")
	if got := x.Pods([]Ref{{ConfigMap, "default", "a"}}); len(got) != 0 {
		t.Errorf("after delete %v", got)
	}
}

func TestPayload(t *testing.T) {
	yes := true
	s := NewStore(nil)
	c := cm("a", map[string]string{"k1": "v1"})
	c.BinaryData = map[string][]byte{"b": {0, 1}}
	s.Replace([]*corev1.ConfigMap{c}, nil)
	mode := int32(0o600)
	for _, tc := range []struct {
		name string
		v    corev1.ConfigMapVolumeSource
		want map[string]File
		err  string
	}{
		{"all keys", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}},
			map[string]File{"k1": {[]byte("v1"), 0o644}, "b": {[]byte{0, 1}, 0o644}}, ""},
		{"items and modes", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, DefaultMode: &mode,
			Items: []corev1.KeyToPath{{Key: "k1", Path: "d/one"}, {Key: "b", Path: "bin", Mode: ptr(int32(0o400))}}},
			map[string]File{"d/one": {[]byte("v1"), 0o600}, "bin": {[]byte{0, 1}, 0o400}}, ""},
		{"missing key", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Items: []corev1.KeyToPath{{Key: "zz", Path: "z"}}},
			nil, `configmap "a": references non-existent key zz`},
		{"missing key optional", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Optional: &yes, Items: []corev1.KeyToPath{{Key: "zz", Path: "z"}}},
			map[string]File{}, ""},
		{"missing", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}}, nil, `configmap "nope" not found`},
		{"missing optional", corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Optional: &yes}, map[string]File{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigMapPayload(s.For(&corev1.Pod{}), "default", &tc.v)
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if err == nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := SecretPayload(s.For(&corev1.Pod{}), "default", &corev1.SecretVolumeSource{SecretName: "x"}); err == nil || err.Error() != `secret "x" not found` {
		t.Errorf("secret: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
