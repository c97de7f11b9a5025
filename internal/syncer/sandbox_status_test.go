package syncer

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/cgroups"
	"github.com/podhost/podhost/internal/network"
	"github.com/podhost/podhost/internal/sandbox"
	"github.com/podhost/podhost/internal/state"
)

// Fakes for a sandbox that fails at a chosen step.
type failStore struct {
	Store
	putErr error
}

func (f *failStore) PutSandbox(state.SandboxRecord) error          { return f.putErr }
func (f *failStore) ListSandboxes() ([]state.SandboxRecord, error) { return nil, nil }
func (f *failStore) DeleteSandbox(string) error                    { return nil }
func (f *failStore) PurgePod(types.UID) error                      { return nil }

type okCgroups struct{ Cgroups }

func (okCgroups) EnsurePod(context.Context, types.UID, corev1.PodQOSClass, cgroups.Resources) (cgroups.PodCgroup, error) {
	return cgroups.PodCgroup{Name: "pod"}, nil
}

type failSandboxes struct {
	Sandboxes
	dir string
}

func (f failSandboxes) Dir(id string) string { return f.dir + "/" + id }
func (f failSandboxes) Create(_ context.Context, id string, _ *corev1.Pod) (sandbox.Paths, error) {
	return sandbox.Paths{Dir: f.dir + "/" + id, NetNS: f.dir + "/" + id + "/net"}, nil
}
func (failSandboxes) WriteHosts(sandbox.Paths, *corev1.Pod, []string) error { return nil }
func (failSandboxes) Remove(context.Context, sandbox.Paths) error           { return nil }

type failNetwork struct{ setupErr error }

func (f failNetwork) Setup(context.Context, string, string, []network.PortMapping) (*network.Result, error) {
	if f.setupErr != nil {
		return nil, f.setupErr
	}
	return &network.Result{IPs: []string{"10.89.0.9"}}, nil
}
func (failNetwork) Teardown(context.Context, string, string, []network.PortMapping) error { return nil }

type failVolumes struct {
	Volumes
	err error
}

func (f failVolumes) Prepare(context.Context, *corev1.Pod) (map[string]string, error) {
	return nil, f.err
}

type statusObserver struct {
	probeObserver
	st corev1.PodStatus
}

func (o *statusObserver) SetStatus(_ *corev1.Pod, st corev1.PodStatus) { o.st = st }
func (o *statusObserver) LastStatus(types.UID) *corev1.PodStatus       { return nil }

func waitingReasons(st corev1.PodStatus) map[string]string {
	out := map[string]string{}
	for _, cs := range append(append([]corev1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			out[cs.Name] = w.Reason + ": " + w.Message
		}
	}
	return out
}

func TestSandboxFailureShowsInContainerStatuses(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
			InitContainers: []corev1.Container{{Name: "init", Image: "img"}},
			Containers:     []corev1.Container{{Name: "app", Image: "img"}}},
	}
	enospc := fmt.Errorf("write state.db: %w", syscall.ENOSPC)
	store, obs := &failStore{putErr: enospc}, &statusObserver{probeObserver: probeObserver{desired: true}}
	net := &failNetwork{}
	vols := &failVolumes{}
	s := New(Config{}, Deps{Runtime: &probeRuntime{}, Cgroups: okCgroups{}, Store: store, Observer: obs,
		Sandboxes: failSandboxes{dir: t.TempDir()}, Network: net, Volumes: vols, Waker: &probeWaker{}})
	ctx := context.Background()

	for _, step := range []struct {
		name             string
		putErr, setupErr error
		want             map[string]string
	}{
		{name: "ENOSPC recording the sandbox", putErr: enospc, want: map[string]string{
			"init": "CreatePodSandboxError: record sandbox: write state.db: no space left on device",
			"app":  "CreatePodSandboxError: record sandbox: write state.db: no space left on device"}},
		{name: "CNI failure", setupErr: errors.New(`plugin type="bridge" failed (add): boom`), want: map[string]string{
			"init": `CreatePodSandboxError: set up pod network: plugin type="bridge" failed (add): boom`,
			"app":  `CreatePodSandboxError: set up pod network: plugin type="bridge" failed (add): boom`}},
		{name: "sandbox made, volumes fail", want: map[string]string{
			"init": "CreateContainerConfigError: volumes: write state.db: no space left on device",
			"app":  "PodInitializing: "}},
	} {
		store.putErr, net.setupErr, vols.err = step.putErr, step.setupErr, enospc
		if _, err := s.SyncPod(ctx, 0, pod, nil); err == nil {
			t.Fatalf("%s: SyncPod succeeded", step.name)
		}
		if got := waitingReasons(obs.st); fmt.Sprint(got) != fmt.Sprint(step.want) {
			t.Errorf("%s: waiting\n%q\nwant\n%q", step.name, got, step.want)
		}
	}
}
