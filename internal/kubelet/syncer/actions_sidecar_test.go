package syncer

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/prober"
	"github.com/podhost/podhost/internal/model/podstate"
)

// sidecarPod is testPod with the named init containers made sidecars
// (restartPolicy Always); probed ones get a startupProbe.
func sidecarPod(policy corev1.RestartPolicy, inits []string, sidecars map[string]bool, apps ...string) *corev1.Pod {
	p := testPod(policy, inits, apps...)
	always := corev1.ContainerRestartPolicyAlways
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		probed, ok := sidecars[c.Name]
		if !ok {
			continue
		}
		c.RestartPolicy = &always
		if probed {
			c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}
	}
	return p
}

func TestComputePodActionsSidecars(t *testing.T) {
	const (
		run  = podstate.StateRunning
		exit = podstate.StateExited
	)
	always, never := corev1.RestartPolicyAlways, corev1.RestartPolicyNever
	plain := map[string]bool{"s1": false, "s2": false}
	probed := map[string]bool{"s1": true, "s2": false}
	tests := []struct {
		name         string
		pod          *corev1.Pod
		containers   []*podstate.Container
		started      map[string]bool
		unhealthy    map[string]probeFailure
		want         podActions
		wantStart    []string
		wantInit     string
		wantSidecars []string
		wantKills    int
	}{
		{name: "first sidecar starts first", pod: sidecarPod(never, []string{"s1", "i1", "s2"}, plain, "a"),
			wantInit: "s1"},
		{name: "running sidecar without startupProbe lets the next init start",
			pod:        sidecarPod(never, []string{"s1", "i1", "s2"}, plain, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0)}, wantInit: "i1"},
		{name: "sidecar waits for its startupProbe", pod: sidecarPod(never, []string{"s1", "i1"}, probed, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0)}},
		{name: "startupProbe result missing: not started", pod: sidecarPod(never, []string{"s1", "i1"}, probed, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0)}, started: map[string]bool{"s1": false}},
		{name: "startupProbe succeeded: next init starts", pod: sidecarPod(never, []string{"s1", "i1"}, probed, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0)}, started: map[string]bool{"s1": true}, wantInit: "i1"},
		{name: "regular init done, second sidecar starts", pod: sidecarPod(never, []string{"s1", "i1", "s2"}, plain, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0), ctr("i1", exit, 0)}, wantInit: "s2"},
		{name: "all sidecars started: apps start", pod: sidecarPod(never, []string{"s1", "i1", "s2"}, plain, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0), ctr("i1", exit, 0), ctr("s2", run, 0)}, wantStart: []string{"a"}},
		{name: "sidecar exited during init restarts even under Never",
			pod:        sidecarPod(never, []string{"s1", "i1"}, plain, "a"),
			containers: []*podstate.Container{ctr("s1", exit, 0), ctr("i1", run, 0)}, wantInit: "s1"},
		{name: "failed sidecar does not fail a Never pod", pod: sidecarPod(never, []string{"s1"}, plain, "a"),
			containers: []*podstate.Container{ctr("s1", exit, 1)}, wantInit: "s1"},
		{name: "initialized: crashed sidecar restarts alongside running app",
			pod:          sidecarPod(never, []string{"s1", "i1", "s2"}, plain, "a"),
			containers:   []*podstate.Container{ctr("s1", exit, 1), ctr("i1", exit, 0), ctr("s2", run, 0), ctr("a", run, 0)},
			wantSidecars: []string{"s1"}},
		{name: "initialized: both sidecars gone restart in order",
			pod:          sidecarPod(always, []string{"s1", "s2"}, plain, "a"),
			containers:   []*podstate.Container{ctr("s1", exit, 0), ctr("s2", exit, 2), ctr("a", run, 0)},
			wantSidecars: []string{"s1", "s2"}},
		{name: "apps finished for good: terminal with sidecars running, not restarted",
			pod:        sidecarPod(never, []string{"s1", "s2"}, plain, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0), ctr("s2", exit, 1), ctr("a", exit, 0)},
			want:       podActions{Terminal: true, Phase: corev1.PodSucceeded}},
		{name: "phase comes from the app containers", pod: sidecarPod(never, []string{"s1"}, plain, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0), ctr("a", exit, 3)},
			want:       podActions{Terminal: true, Phase: corev1.PodFailed}},
		{name: "Always pod: app restarts, sidecar running", pod: sidecarPod(always, []string{"s1"}, plain, "a"),
			containers: []*podstate.Container{ctr("s1", run, 0), ctr("a", exit, 0)}, wantStart: []string{"a"}},
		{name: "unhealthy sidecar is killed first", pod: sidecarPod(never, []string{"s1"}, probed, "a"),
			containers: []*podstate.Container{{Name: "s1", ID: "c1", State: run, SandboxID: "sb1", Hash: "h1"}, ctr("a", run, 0)},
			unhealthy:  map[string]probeFailure{"s1": {ContainerID: "c1", Probe: prober.ReasonStartup}}, wantKills: 1},
		{name: "stale unhealthy result of an old instance is ignored", pod: sidecarPod(never, []string{"s1"}, plain, "a"),
			containers: []*podstate.Container{{Name: "s1", ID: "c2", State: run, SandboxID: "sb1"}, ctr("a", run, 0)},
			unhealthy:  map[string]probeFailure{"s1": {ContainerID: "c1", Probe: prober.ReasonLiveness}}},
		{name: "sidecar of an old sandbox: init phase starts over",
			pod:        sidecarPod(always, []string{"s1"}, plain, "a"),
			containers: []*podstate.Container{{Name: "s1", State: run, SandboxID: "old"}, {Name: "a", State: exit, SandboxID: "old"}},
			wantInit:   "s1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation{SandboxID: "sb1", SandboxReady: true, Started: tt.started, Unhealthy: tt.unhealthy,
				Running: &podstate.Pod{UID: tt.pod.UID, Containers: tt.containers}}
			got := computePodActions(tt.pod, obs)
			checkActions(t, got, tt.want, tt.wantStart, tt.wantInit, 0)
			if g := names(got.StartSidecars); !slices.Equal(g, tt.wantSidecars) {
				t.Fatalf("sidecars = %v, want %v", g, tt.wantSidecars)
			}
			if len(got.Unhealthy) != tt.wantKills {
				t.Fatalf("unhealthy = %d, want %d", len(got.Unhealthy), tt.wantKills)
			}
		})
	}
}
