package volumes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/desired/configdata"
)

// Prepare writes configMap and downwardAPI volumes (the latter on a
// tmpfs); Refresh follows a ConfigMap change and a label change of the
// same pod; Cleanup unmounts.
func TestPrepareAndRefreshDataVolumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (tmpfs)")
	}
	store := configdata.NewStore(nil)
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
	mountAll(pod)
	paths, _, err := m.Prepare(ctx, pod)
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

// A data volume populated once keeps its last files when its ConfigMap or
// an items key goes away: Prepare succeeds (the containers restart with the
// old files) and returns the kubelet's FailedMount message. A volume never
// populated still fails.
func TestPrepareKeepsPopulatedDataVolume(t *testing.T) {
	cmVolume := func(items ...corev1.KeyToPath) corev1.Volume {
		return corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Items: items}}}
	}
	cm := func(data map[string]string) []*corev1.ConfigMap {
		return []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}, Data: data}}
	}
	tests := []struct {
		name        string
		vol         corev1.Volume
		first, then []*corev1.ConfigMap // first nil: never populated
		wantErr     string
		wantWarning string
	}{
		{name: "ConfigMap deleted", vol: cmVolume(), first: cm(map[string]string{"k": "1"}),
			wantWarning: `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found`},
		{name: "items key gone", vol: cmVolume(corev1.KeyToPath{Key: "k", Path: "k"}),
			first: cm(map[string]string{"k": "1"}), then: cm(map[string]string{"other": "2"}),
			wantWarning: `MountVolume.SetUp failed for volume "cfg" : configmap "app": references non-existent key k`},
		{name: "never populated", vol: cmVolume(), wantErr: `spec.volumes[0] (cfg): configmap "app" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := configdata.NewStore(nil)
			m := &Manager{Root: t.TempDir(), Data: store}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-1"},
				Spec: corev1.PodSpec{Volumes: []corev1.Volume{tt.vol}}}
			mountAll(pod)
			ctx := context.Background()
			if tt.first != nil {
				store.Replace(tt.first, nil)
				if _, warnings, err := m.Prepare(ctx, pod); err != nil || len(warnings) > 0 {
					t.Fatalf("first prepare: %v %v", warnings, err)
				}
			}
			store.Replace(tt.then, nil)
			paths, warnings, err := m.Prepare(ctx, pod)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != 1 || warnings[0].Error() != tt.wantWarning {
				t.Errorf("warnings = %q, want %q", warnings, tt.wantWarning)
			}
			if b, err := os.ReadFile(filepath.Join(paths["cfg"], "k")); err != nil || string(b) != "1" {
				t.Errorf("last contents: %q %v", b, err)
			}
		})
	}
}
