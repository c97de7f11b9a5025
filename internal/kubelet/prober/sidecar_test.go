package prober

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/podstate"
)

// A sidecar (restartable init container) is probed like a regular
// container; a regular init container never is.
func TestSidecarIsProbed(t *testing.T) {
	f := newFixture(t)
	sp := probeSpec(1, 3)
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{ObjectMeta: metaUID("pod-s"), Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "setup", StartupProbe: probeSpec(1, 1)}, // refused at apply; ignored here
			{Name: "proxy", RestartPolicy: &always, StartupProbe: sp},
		},
		Containers: []corev1.Container{{Name: "main"}},
	}}
	now := f.clock.Now()
	running := &podstate.Pod{UID: pod.UID, Containers: []*podstate.Container{
		{ID: "s1", Name: "setup", Init: true, State: podstate.StateRunning, StartedAt: now},
		{ID: "p1", Name: "proxy", Init: true, State: podstate.StateRunning, StartedAt: now},
	}}
	f.m.Sync(pod, running, "10.0.0.5")
	if s, ok := f.m.Results(pod.UID).Started["proxy"]; !ok || s {
		t.Fatalf("proxy started=%v tracked=%v before its startup probe succeeded", s, ok)
	}
	c := f.answer(sp, ok)
	if c.req.containerID != "p1" {
		t.Fatalf("probe ran in %q, want the sidecar p1", c.req.containerID)
	}
	f.waitChange()
	r := f.m.Results(pod.UID)
	if !r.Started["proxy"] {
		t.Fatalf("proxy not started after its startup probe succeeded: %+v", r)
	}
	if _, ok := r.Started["setup"]; ok {
		t.Fatal("a regular init container was probed")
	}
}
