package openapi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/yaml"
)

func TestTypeConverterObjects(t *testing.T) {
	tc, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{
		&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "a"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i",
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}}}}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"}},
	} {
		kind := obj.GetObjectKind().GroupVersionKind()
		tv, err := tc.ObjectToTyped(obj)
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		// The schema knows the fields: a set listing them is not empty.
		set, err := tv.ToFieldSet()
		if err != nil || set.Empty() {
			t.Errorf("%s: field set %v, %v", kind, set, err)
		}
		back, err := tc.TypedToObject(tv)
		if err != nil || back.GetObjectKind().GroupVersionKind() != kind {
			t.Errorf("%s: back to an object: %v, %v", kind, back, err)
		}
	}
	// A field the schema does not know is an error, as the API server's.
	bad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p"}, "spec": map[string]any{"bogus": 1}}}
	if _, err := tc.ObjectToTyped(bad); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown field: %v", err)
	}
}

func podScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func applied(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// A server-side apply of a pod with apimachinery's field manager (the API
// server's): a create, a conflicting apply by another manager, and the
// same forced.
func TestFieldManagerApplyPod(t *testing.T) {
	tc, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	s := podScheme(t)
	fm, err := managedfields.NewDefaultFieldManager(tc, s, s, s, corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	const podYAML = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers: [{name: c, image: %s}]\n"
	empty := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
	live, err := fm.Apply(empty, applied(t, strings.Replace(podYAML, "%s", "busybox:1", 1)), "kubectl", false)
	if err != nil {
		t.Fatal(err)
	}
	pod := live.(*corev1.Pod)
	if pod.Spec.Containers[0].Image != "busybox:1" || len(pod.ManagedFields) != 1 ||
		pod.ManagedFields[0].Manager != "kubectl" || pod.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("after the first apply: image %q, managedFields %+v", pod.Spec.Containers[0].Image, pod.ManagedFields)
	}
	if !strings.Contains(pod.ManagedFields[0].FieldsV1.GetRawString(), `"k:{\"name\":\"c\"}"`) {
		t.Errorf("containers are not a map keyed by name: %s", pod.ManagedFields[0].FieldsV1.GetRawString())
	}

	other := applied(t, strings.Replace(podYAML, "%s", "busybox:2", 1))
	_, err = fm.Apply(live, other, "other", false)
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `.spec.containers[name="c"].image`) {
		t.Fatalf("second manager's apply: %v, want a conflict on the image", err)
	}
	forced, err := fm.Apply(live, other, "other", true)
	if err != nil {
		t.Fatal(err)
	}
	if img := forced.(*corev1.Pod).Spec.Containers[0].Image; img != "busybox:2" {
		t.Errorf("forced apply: image %q", img)
	}
}
