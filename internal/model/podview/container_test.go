package podview

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDefaultContainer(t *testing.T) {
	pod := func(ann string, init []string, app ...string) *corev1.Pod {
		p := &corev1.Pod{}
		if ann != "" {
			p.Annotations = map[string]string{DefaultContainerAnnotation: ann}
		}
		for _, n := range init {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n})
		}
		for _, n := range app {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
		}
		return p
	}
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		want, note string
	}{
		{"one container", pod("", nil, "app"), "app", ""},
		{"first of several", pod("", nil, "app", "log"), "app", `Defaulted container "app" out of: app, log`},
		{"with an init container", pod("", []string{"setup"}, "app"), "app", `Defaulted container "app" out of: app, setup (init)`},
		{"the annotation's", pod("log", nil, "app", "log"), "log", ""},
		{"the annotation may name an init container", pod("setup", []string{"setup"}, "app"), "setup", ""},
		{"an unknown annotation is ignored", pod("nope", nil, "app", "log"), "app", `Defaulted container "app" out of: app, log`},
	} {
		got, note := DefaultContainer(tc.pod)
		if got != tc.want || note != tc.note {
			t.Errorf("%s: %q, %q; want %q, %q", tc.name, got, note, tc.want, tc.note)
		}
	}
}
