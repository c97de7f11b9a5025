package imagegc

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodImagesImageVolumes: an image volume's image is the pod's as a
// container's is, so image GC keeps it while a manifest names it.
func TestPodImagesImageVolumes(t *testing.T) {
	p := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "app:1"}},
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "data:2"}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}}
	got := PodImages(p)
	slices.Sort(got)
	if want := []string{"app:1", "data:2"}; !slices.Equal(got, want) {
		t.Fatalf("PodImages = %v, want %v", got, want)
	}
	if !Matcher(got)(Image{Ref: "docker.io/library/data:2"}) {
		t.Error("the image volume's image does not count as in use")
	}
}
