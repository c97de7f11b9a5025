package syncer

import (
	"context"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/spec"
)

func TestScopeStopTimeoutAnnotation(t *testing.T) {
	for _, tt := range []struct {
		grace time.Duration
		want  string
	}{
		{30 * time.Second, "uint64 30000000"},
		{0, "uint64 1000000"}, // at least 1 s, as the pod workers' grace
	} {
		s := &specs.Spec{}
		if err := withScopeStopTimeout(tt.grace)(context.Background(), nil, nil, s); err != nil {
			t.Fatal(err)
		}
		if got := s.Annotations["org.systemd.property.TimeoutStopUSec"]; got != tt.want {
			t.Fatalf("grace %v: annotation %q, want %q", tt.grace, got, tt.want)
		}
	}
}

// Container specs prepare subPaths with the pod's volumes.PrepareSubPath
// (the kubelet's makeMounts): the mount source is what it returns; and
// they create missing mount sources with volumes.MakeMountSource when the
// container is created (containerd CRI's WithMounts), not before the init
// containers run.
func TestSpecPodPreparesSubPaths(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "app")
	sp := w.s.specPod(startInput{pod: pod})
	if sp.PrepareSubPath == nil || sp.MakeMountSource == nil {
		t.Fatal("spec.Pod lacks the PrepareSubPath or MakeMountSource hook")
	}
	got, err := sp.PrepareSubPath(spec.SubPathMount{Volume: "v", Container: "app", Index: 2, VolumePath: "/v", Path: "a"})
	if want := "/fake/pods/" + string(pod.UID) + "/volume-subpaths/v/app/2"; err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	if err := sp.MakeMountSource("/x/conf"); err != nil || len(w.host.madeSources) != 1 || w.host.madeSources[0] != "/x/conf" {
		t.Fatalf("MakeMountSource: %v, made %v, want [/x/conf]", err, w.host.madeSources)
	}
}

// The hosts file is rewritten before every container start (the kubelet's
// makeMounts → ensureHostsFile), not only when the sandbox is made; a
// failed write is the kubelet's CreateContainerConfigError.
func TestHostsRewrittenOnContainerStart(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "a", "b")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	sb := w.sandboxOf(t, pod.UID)
	want := sb.Dir + " " + strings.Join(sb.IPs, ",")
	// One write when the network is up, then one per container start.
	if got := w.host.hostsWrites; len(got) != 3 || got[1] != want || got[2] != want {
		t.Fatalf("hosts writes %q, want 3 ending with two of %q", got, want)
	}

	w = newWorld()
	w.host.hostsFailFrom = 2 // the sandbox's write succeeds, the first start's fails
	_, _ = syncOnce(t, w, pod)
	if p := w.rt.pods[pod.UID]; p != nil && len(p.Containers) != 0 {
		t.Fatalf("containers created although the hosts file could not be written: %+v", p.Containers)
	}
	st := w.obs.last()
	if len(st.ContainerStatuses) == 0 || st.ContainerStatuses[0].State.Waiting == nil ||
		st.ContainerStatuses[0].State.Waiting.Reason != "CreateContainerConfigError" {
		t.Errorf("status %+v, want a waiting with CreateContainerConfigError", st.ContainerStatuses)
	}
}
