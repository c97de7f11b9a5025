package volumes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/configdata"
)

// Prepare writes configMap and downwardAPI volumes (the latter on a
// tmpfs); Refresh follows a ConfigMap change and a label change of the
// same pod; Cleanup unmounts.
func TestPrepareAndRefreshDataVolumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (tmpfs)")
	}
	store := configdata.NewStore()
	cm := func(v string) []*corev1.ConfigMap {
		return []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}, Data: map[string]string{"k": v}}}
	}
	store.Replace(cm("1"), nil)
	m := &Manager{Root: t.TempDir(), Data: store}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-1", Labels: map[string]string{"v": "1"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
			{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}}},
			{Name: "missing", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "nope", Optional: ptr(true)}}},
		}}}
	ctx := context.Background()
	paths, err := m.Prepare(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	read := func(vol, name string) string {
		b, err := os.ReadFile(filepath.Join(paths[vol], name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read("cfg", "k") != "1" || read("info", "labels") != `v="1"` {
		t.Fatalf("contents %q %q", read("cfg", "k"), read("info", "labels"))
	}
	if mounted, _ := isMountPoint(paths["info"]); !mounted {
		t.Error("downwardAPI volume is not a tmpfs")
	}
	store.Replace(cm("2"), nil)
	pod.Labels["v"] = "2"
	if err := m.Refresh(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if read("cfg", "k") != "2" || read("info", "labels") != `v="2"` {
		t.Fatalf("after refresh %q %q", read("cfg", "k"), read("info", "labels"))
	}
	store.Replace(nil, nil)
	if err := m.Refresh(ctx, pod); err == nil || !strings.Contains(err.Error(), `configmap "app" not found`) {
		t.Errorf("refresh without the ConfigMap: %v", err)
	}
	if read("cfg", "k") != "2" {
		t.Error("a ConfigMap that went away must leave the last files")
	}
	if err := m.Cleanup(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.PodDir(pod.UID)); !os.IsNotExist(err) {
		t.Errorf("pod dir left: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
