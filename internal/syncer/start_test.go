package syncer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
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

// Container specs prepare subPaths with volumes.SubPath (the kubelet's
// makeMounts): one that resolves outside its volume is refused.
func TestSpecPodPreparesSubPaths(t *testing.T) {
	w := newWorld()
	sp := w.s.specPod(startInput{pod: worldPod(corev1.RestartPolicyAlways, "app")})
	if sp.SubPath == nil {
		t.Fatal("spec.Pod has no SubPath hook")
	}
	base := t.TempDir()
	if err := os.Symlink("/", filepath.Join(base, "esc")); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.SubPath(base, "esc"); err == nil {
		t.Fatal("a subPath resolving to / was accepted")
	}
}
