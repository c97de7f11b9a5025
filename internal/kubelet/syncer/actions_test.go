package syncer

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func testPod(policy corev1.RestartPolicy, inits []string, apps ...string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = "web", "default", "uid-1"
	p.Annotations = map[string]string{wellknown.AnnotationConfigHash: "h1"}
	p.Spec.RestartPolicy = policy
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n})
	}
	return p
}

func ctr(name string, state podstate.ContainerState, exit int32) *podstate.Container {
	return &podstate.Container{Name: name, State: state, ExitCode: exit, SandboxID: "sb1", Hash: "h1"}
}

func names(cs []*corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestComputePodActions(t *testing.T) {
	const (
		run  = podstate.StateRunning
		exit = podstate.StateExited
		crt  = podstate.StateCreated
	)
	always, onFail, never := corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever
	tests := []struct {
		name       string
		pod        *corev1.Pod
		ready      bool
		containers []*podstate.Container
		want       podActions
		wantStart  []string
		wantInit   string
		wantKill   int
		killed     map[string]string // observation.Killed
	}{
		{name: "new pod creates sandbox and starts all", pod: testPod(always, nil, "a", "b"),
			want: podActions{CreateSandbox: true}, wantStart: []string{"a", "b"}},
		{name: "new pod with init starts only first init", pod: testPod(always, []string{"i1", "i2"}, "a"),
			want: podActions{CreateSandbox: true}, wantInit: "i1"},
		{name: "sandbox lost kills running and recreates", pod: testPod(always, nil, "a"),
			containers: []*podstate.Container{ctr("a", run, 0)},
			want:       podActions{CreateSandbox: true, KillPod: true}, wantStart: []string{"a"}},
		{name: "sandbox lost, Never policy, already ran: terminal", pod: testPod(never, nil, "a"),
			containers: []*podstate.Container{ctr("a", exit, 0)},
			want:       podActions{Terminal: true, Phase: corev1.PodSucceeded}},
		{name: "sandbox lost, Never policy, was running: failed", pod: testPod(never, nil, "a"),
			containers: []*podstate.Container{ctr("a", run, 0)},
			want:       podActions{KillPod: true, Terminal: true, Phase: corev1.PodFailed}},
		{name: "no sandbox, OnFailure already succeeded: terminal, no restart", pod: testPod(onFail, nil, "a"),
			containers: []*podstate.Container{ctr("a", exit, 0)},
			want:       podActions{Terminal: true, Phase: corev1.PodSucceeded}},
		{name: "sandbox lost, OnFailure, failed (reboot: 255 Unknown): new sandbox, restart", pod: testPod(onFail, nil, "a"),
			containers: []*podstate.Container{ctr("a", exit, 255)},
			want:       podActions{CreateSandbox: true}, wantStart: []string{"a"}},
		{name: "sandbox lost, OnFailure: only the containers that did not succeed start", pod: testPod(onFail, nil, "a", "b", "c"),
			containers: []*podstate.Container{ctr("a", exit, 0), ctr("b", run, 0), ctr("c", exit, 1)},
			want:       podActions{CreateSandbox: true, KillPod: true}, wantStart: []string{"b", "c"}},
		{name: "sandbox lost, OnFailure with init, one failed: inits rerun first", pod: testPod(onFail, []string{"i1"}, "a", "b"),
			containers: []*podstate.Container{ctr("i1", exit, 0), ctr("a", exit, 0), ctr("b", exit, 255)},
			want:       podActions{CreateSandbox: true}, wantInit: "i1"},
		{name: "sandbox lost, Always: succeeded containers start too", pod: testPod(always, nil, "a", "b"),
			containers: []*podstate.Container{ctr("a", exit, 0), ctr("b", exit, 255)},
			want:       podActions{CreateSandbox: true}, wantStart: []string{"a", "b"}},
		{name: "sandbox lost, Never, only an init container ran: failed, no new sandbox", pod: testPod(never, []string{"i1"}, "a"),
			containers: []*podstate.Container{ctr("i1", exit, 255)},
			want:       podActions{Terminal: true, Phase: corev1.PodFailed}},
		{name: "sandbox lost, Never, init container running: killed, failed", pod: testPod(never, []string{"i1"}, "a"),
			containers: []*podstate.Container{ctr("i1", run, 0)},
			want:       podActions{KillPod: true, Terminal: true, Phase: corev1.PodFailed}},
		{name: "new Never pod creates sandbox", pod: testPod(never, []string{"i1"}, "a"),
			want: podActions{CreateSandbox: true}, wantInit: "i1"},
		{name: "steady state does nothing", pod: testPod(always, nil, "a"), ready: true,
			containers: []*podstate.Container{ctr("a", run, 0)}},
		{name: "missing container starts", pod: testPod(always, nil, "a", "b"), ready: true,
			containers: []*podstate.Container{ctr("a", run, 0)}, wantStart: []string{"b"}},
		{name: "created but not started is started", pod: testPod(always, nil, "a"), ready: true,
			containers: []*podstate.Container{ctr("a", crt, 0)}, wantStart: []string{"a"}},
		{name: "Always restarts exit 0", pod: testPod(always, nil, "a"), ready: true,
			containers: []*podstate.Container{ctr("a", exit, 0)}, wantStart: []string{"a"}},
		{name: "OnFailure restarts failure", pod: testPod(onFail, nil, "a"), ready: true,
			containers: []*podstate.Container{ctr("a", exit, 3)}, wantStart: []string{"a"}},
		{name: "OnFailure: probe-killed instance restarts despite exit 0", pod: testPod(onFail, nil, "a"), ready: true,
			containers: []*podstate.Container{{ID: "c1", Name: "a", State: exit, SandboxID: "sb1", Hash: "h1"}},
			killed:     map[string]string{"a": "c1"}, wantStart: []string{"a"}},
		{name: "OnFailure: an older probe kill does not restart a clean exit", pod: testPod(onFail, nil, "a"), ready: true,
			containers: []*podstate.Container{{ID: "c2", Name: "a", State: exit, SandboxID: "sb1", Hash: "h1"}},
			killed:     map[string]string{"a": "c1"}, want: podActions{Terminal: true, Phase: corev1.PodSucceeded}},
		{name: "Never: probe-killed instance does not restart", pod: testPod(never, nil, "a"), ready: true,
			containers: []*podstate.Container{{ID: "c1", Name: "a", State: exit, SandboxID: "sb1", Hash: "h1"}},
			killed:     map[string]string{"a": "c1"}, want: podActions{Terminal: true, Phase: corev1.PodSucceeded}},
		{name: "OnFailure success is terminal", pod: testPod(onFail, nil, "a"), ready: true,
			containers: []*podstate.Container{ctr("a", exit, 0)},
			want:       podActions{Terminal: true, Phase: corev1.PodSucceeded}},
		{name: "Never failure is terminal failed", pod: testPod(never, nil, "a", "b"), ready: true,
			containers: []*podstate.Container{ctr("a", exit, 0), ctr("b", exit, 1)},
			want:       podActions{Terminal: true, Phase: corev1.PodFailed}},
		{name: "Never with one still running is not terminal", pod: testPod(never, nil, "a", "b"), ready: true,
			containers: []*podstate.Container{ctr("a", exit, 0), ctr("b", run, 0)}},
		{name: "hash change kills and restarts", pod: testPod(always, nil, "a"), ready: true,
			containers: []*podstate.Container{{Name: "a", State: run, SandboxID: "sb1", Hash: "old"}},
			wantStart:  []string{"a"}, wantKill: 1},
		{name: "init running blocks apps", pod: testPod(always, []string{"i1"}, "a"), ready: true,
			containers: []*podstate.Container{ctr("i1", run, 0)}},
		{name: "init done starts next init", pod: testPod(always, []string{"i1", "i2"}, "a"), ready: true,
			containers: []*podstate.Container{ctr("i1", exit, 0)}, wantInit: "i2"},
		{name: "inits done start apps", pod: testPod(always, []string{"i1", "i2"}, "a"), ready: true,
			containers: []*podstate.Container{ctr("i1", exit, 0), ctr("i2", exit, 0)}, wantStart: []string{"a"}},
		{name: "failed init restarts under Always", pod: testPod(always, []string{"i1"}, "a"), ready: true,
			containers: []*podstate.Container{ctr("i1", exit, 2)}, wantInit: "i1"},
		{name: "failed init under Never fails pod", pod: testPod(never, []string{"i1"}, "a"), ready: true,
			containers: []*podstate.Container{ctr("i1", exit, 2)},
			want:       podActions{Terminal: true, Phase: corev1.PodFailed}},
		{name: "init from an old sandbox reruns", pod: testPod(always, []string{"i1"}, "a"), ready: true,
			containers: []*podstate.Container{{Name: "i1", State: exit, SandboxID: "old"}, {Name: "a", State: exit, SandboxID: "old"}},
			wantInit:   "i1"},
		{name: "initialized pod does not rerun a missing init", pod: testPod(always, []string{"i1"}, "a"), ready: true,
			containers: []*podstate.Container{ctr("a", run, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation{SandboxID: "sb1", SandboxReady: tt.ready, Killed: tt.killed,
				Running: &podstate.Pod{UID: tt.pod.UID, Containers: tt.containers}}
			checkActions(t, computePodActions(tt.pod, obs), tt.want, tt.wantStart, tt.wantInit, tt.wantKill)
		})
	}
}

func checkActions(t *testing.T, got, want podActions, wantStart []string, wantInit string, wantKill int) {
	t.Helper()
	{
		{
			if got.CreateSandbox != want.CreateSandbox || got.KillPod != want.KillPod ||
				got.Terminal != want.Terminal || got.Phase != want.Phase {
				t.Fatalf("got %+v, want %+v", got, want)
			}
			if g := names(got.Start); !slices.Equal(g, wantStart) {
				t.Fatalf("start = %v, want %v", g, wantStart)
			}
			initName := ""
			if got.StartInit != nil {
				initName = got.StartInit.Name
			}
			if initName != wantInit {
				t.Fatalf("init = %q, want %q", initName, wantInit)
			}
			if len(got.Kill) != wantKill {
				t.Fatalf("kill = %d, want %d", len(got.Kill), wantKill)
			}
		}
	}
}

// A container containerd could not report (UNKNOWN: its shim did not answer
// in time) is left alone — never replaced, which would kill a running one —
// and the pod is not taken for terminal; an init container in that state
// holds the init sequence.
func TestUnknownContainersWait(t *testing.T) {
	unk := podstate.StateUnknown
	for _, c := range []struct {
		name       string
		pod        *corev1.Pod
		containers []*podstate.Container
		wantStart  []string
	}{
		{"app unknown, other missing", testPod(corev1.RestartPolicyAlways, nil, "a", "b"),
			[]*podstate.Container{ctr("a", unk, 0)}, []string{"b"}},
		{"Never, app unknown, other exited: not terminal", testPod(corev1.RestartPolicyNever, nil, "a", "b"),
			[]*podstate.Container{ctr("a", unk, 0), ctr("b", podstate.StateExited, 0)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := computePodActions(c.pod, observation{Running: &podstate.Pod{Containers: c.containers}, SandboxID: "sb1", SandboxReady: true})
			if len(got.Unknown) != 1 || got.Unknown[0].Name != "a" || got.Terminal || got.KillPod {
				t.Fatalf("got %+v: want container a unknown, nothing else decided", got)
			}
			if g := names(got.Start); !slices.Equal(g, c.wantStart) {
				t.Fatalf("start %v, want %v", g, c.wantStart)
			}
		})
	}
	t.Run("init unknown holds the sequence", func(t *testing.T) {
		pod := testPod(corev1.RestartPolicyAlways, []string{"i1"}, "a")
		got := computePodActions(pod, observation{Running: &podstate.Pod{Containers: []*podstate.Container{ctr("i1", unk, 0)}}, SandboxID: "sb1", SandboxReady: true})
		if got.StartInit != nil || len(got.Start) != 0 || got.Terminal || len(got.Unknown) != 1 {
			t.Fatalf("got %+v: want nothing started while i1 is unknown", got)
		}
	})
}

// A container unknown for unknownLimit is replaced as the kubelet replaces
// a CRI container in unknown state.
func TestUnknownTooLongIsReplaced(t *testing.T) {
	a := ctr("a", podstate.StateUnknown, 0)
	a.ID = "c1"
	running := &podstate.Pod{Containers: []*podstate.Container{a}}
	var u unknownTracker
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		at        time.Duration
		wantStart bool
	}{{0, false}, {30 * time.Second, false}, {unknownLimit, true}} {
		got := computePodActions(testPod(corev1.RestartPolicyAlways, nil, "a"),
			observation{Running: running, SandboxID: "sb1", SandboxReady: true, StuckUnknown: u.stuck(running, t0.Add(c.at))})
		if started := len(got.Start) == 1; started != c.wantStart || started == (len(got.Unknown) == 1) {
			t.Fatalf("at +%v: start %v unknown %d, want start %v", c.at, names(got.Start), len(got.Unknown), c.wantStart)
		}
	}
	a.State = podstate.StateRunning
	if stuck := u.stuck(running, t0.Add(2*unknownLimit)); stuck != nil || len(u.entries) != 0 {
		t.Fatalf("a known container is forgotten: stuck %v entries %v", stuck, u.entries)
	}
	a.State = podstate.StateUnknown
	u.stuck(running, t0)
	if u.stuck(&podstate.Pod{}, t0.Add(unknownLimit)); len(u.entries) != 0 {
		t.Fatalf("an entry not seen for unknownLimit stays: %v", u.entries)
	}
}
