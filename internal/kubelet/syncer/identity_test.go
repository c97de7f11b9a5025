package syncer

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func TestSpecChanged(t *testing.T) {
	pod := func(uid, hash, identity string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Name, p.Namespace, p.UID = "web", "default", "uid-1"
		if uid != "" {
			p.UID = manifest.PodUID("default", "web", uid)
		}
		p.Annotations = map[string]string{wellknown.AnnotationConfigHash: hash, wellknown.AnnotationIdentityHash: identity}
		return p
	}
	ctr := func(hash, identity string) *podstate.Container {
		c := &podstate.Container{Name: "a", Hash: hash, Labels: map[string]string{}}
		if identity != "" {
			c.Labels[wellknown.LabelIdentityHash] = identity
		}
		return c
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		c    *podstate.Container
		want bool
	}{
		{"same version", pod("", "h1", "i1"), ctr("h1", "i1"), false},
		{"labels edited: config hash only", pod("", "h2", "i1"), ctr("h1", "i1"), false},
		{"identity changed (explicit uid)", pod("", "h2", "i2"), ctr("h1", "i1"), true},
		{"same document, identity scheme changed", pod("", "h1", "i2"), ctr("h1", "i1"), false},
		{"pod without identity annotation", pod("", "h2", ""), ctr("h1", "i1"), false},
		{"legacy container, same config hash", pod("", "h1", "i1"), ctr("h1", ""), false},
		{"legacy container, adopted pod edited in place", pod("h1", "h2", "i1"), ctr("h1", ""), false},
		{"legacy container, explicit uid edited", pod("", "h2", "i1"), ctr("h1", ""), true},
		{"no hashes", pod("", "", ""), ctr("", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := specChanged(tt.pod, tt.c); got != tt.want {
				t.Errorf("specChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

// A same-UID update that changed only labels (config hash, not identity)
// restarts nothing and rewrites the data volumes from the new pod; an
// identity change replaces the containers.
func TestLabelOnlyUpdateKeepsContainers(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a", "b")
	pod.Annotations[wellknown.AnnotationIdentityHash] = "i1"
	pod.Spec.Volumes = []corev1.Volume{{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}}}
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	before := len(w.rt.calls)

	edited := pod.DeepCopy()
	edited.Labels = map[string]string{"tier": "front"}
	edited.Annotations[wellknown.AnnotationConfigHash] = "h2"
	if _, err := syncOnce(t, w, edited); err != nil {
		t.Fatal(err)
	}
	if calls := w.rt.calls[before:]; len(calls) != 0 {
		t.Errorf("label edit made runtime calls %q, want none", calls)
	}
	w.host.mu.Lock()
	last := w.host.refreshed[len(w.host.refreshed)-1]
	w.host.mu.Unlock()
	if last.Labels["tier"] != "front" {
		t.Errorf("data volumes refreshed from labels %v, want the edited pod's", last.Labels)
	}

	changed := edited.DeepCopy()
	changed.Annotations[wellknown.AnnotationIdentityHash] = "i2"
	if _, err := syncOnce(t, w, changed); err != nil {
		t.Fatal(err)
	}
	running, _ := w.rt.ListPod(t.Context(), pod.UID)
	var ids []string
	for _, c := range running.Running() {
		ids = append(ids, c.Labels[wellknown.LabelIdentityHash])
	}
	if !slices.Equal(ids, []string{"i2", "i2"}) {
		t.Errorf("running containers' identity labels %q after an identity change, want both replaced (i2)", ids)
	}
}
