package manifest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// basePod is a small valid pod that tests mutate.
func basePod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/data"}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/data"},
				},
			}},
		},
	}
}

// podYAML renders a pod as a manifest, without the fields a typed struct
// always carries but users never write.
func podYAML(t testing.TB, pod *corev1.Pod) []byte {
	t.Helper()
	var m map[string]any
	b, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decodePod decodes a mutated base pod.
func decodePod(t testing.TB, mutate func(*corev1.Pod)) (*corev1.Pod, error) {
	t.Helper()
	pod := basePod()
	if mutate != nil {
		mutate(pod)
	}
	pods, err := Decode("/etc/podhost/manifests/web.yaml", podYAML(t, pod))
	if err != nil {
		return nil, err
	}
	if len(pods) != 1 {
		t.Fatalf("got %d pods, want 1", len(pods))
	}
	return pods[0], nil
}

func mustDecodeString(t testing.TB, file, data string) []*corev1.Pod {
	t.Helper()
	pods, err := Decode(file, []byte(data))
	if err != nil {
		t.Fatalf("Decode(%s): %v", file, err)
	}
	return pods
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// assertOneLinePerError checks the ErrorList contract.
func assertOneLinePerError(t testing.TB, err error) {
	t.Helper()
	list, ok := err.(ErrorList)
	if !ok {
		t.Fatalf("error is %T, want ErrorList: %v", err, err)
	}
	for _, fe := range list {
		if strings.ContainsAny(fe.Error(), "\n\r") {
			t.Errorf("error is not one line: %q", fe.Error())
		}
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func ptrTo[T any](v T) *T { return &v }
