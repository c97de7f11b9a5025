package podsecurity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func pod(name string, mutate func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Annotations: map[string]string{wellknown.AnnotationConfigSource: "https://cfg.example/pods.yaml"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func privileged(s *corev1.PodSpec) {
	yes := true
	s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
}

func hostPath(path string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}})
	}
}

func mustNew(t *testing.T, level string, hostPaths ...string) Policy {
	t.Helper()
	p, err := New("manifestURL", level, hostPaths)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The levels as the upstream library's checks and messages say.
func TestCheckLevels(t *testing.T) {
	for _, tt := range []struct {
		level string
		pod   *corev1.Pod
		want  string // "" = allowed
	}{
		{"privileged", pod("p", privileged), ""},
		{"baseline", pod("plain", nil), ""},
		{"baseline", pod("p", privileged), `pod default/p violates PodSecurity "baseline:latest" (podSecurity.manifestURL): privileged (container "app" must not set securityContext.privileged=true)`},
		{"baseline", pod("h", func(s *corev1.PodSpec) { s.HostNetwork = true }), `host namespaces (hostNetwork=true)`},
		{"baseline", pod("v", hostPath("/etc")), `hostPath volumes (volume "data")`},
		{"restricted", pod("plain", nil), `violates PodSecurity "restricted:latest" (podSecurity.manifestURL): allowPrivilegeEscalation != false`},
	} {
		err := mustNew(t, tt.level).Check(tt.pod)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %s: refused: %v", tt.level, tt.pod.Name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %s: %v, want %q", tt.level, tt.pod.Name, err, tt.want)
		}
	}
}

// allowedHostPaths: hostPath volumes under a listed path are allowed (at
// any level), others refused, also through a symlink that leads out.
func TestAllowedHostPaths(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "data")
	if err := os.MkdirAll(allowed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(allowed, "escape")); err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, "baseline", allowed)
	for path, ok := range map[string]bool{
		allowed: true, allowed + "/sub/new": true, allowed + "/../data/x": true,
		allowed + "x": false, dir: false, allowed + "/escape": false, allowed + "/escape/passwd": false,
	} {
		err := p.Check(pod("v", hostPath(path)))
		if ok != (err == nil) {
			t.Errorf("%s: %v, want allowed %v", path, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "is not under podSecurity.manifestURL.allowedHostPaths") {
			t.Errorf("%s: %v", path, err)
		}
	}
	// The level still applies to the rest of the pod.
	if err := p.Check(pod("v", func(s *corev1.PodSpec) { hostPath(allowed)(s); privileged(s) })); err == nil || !strings.Contains(err.Error(), "privileged") {
		t.Errorf("privileged with an allowed hostPath: %v", err)
	}
	if err := mustNew(t, "privileged", allowed).Check(pod("v", hostPath("/etc"))); err == nil {
		t.Error("privileged with a list: /etc allowed")
	}
}

func TestZeroPolicyAllowsAll(t *testing.T) {
	var p Policy
	if !p.Permissive() || p.Check(pod("p", func(s *corev1.PodSpec) { privileged(s); hostPath("/")(s) })) != nil {
		t.Error("the zero policy refuses a pod")
	}
}

func TestNew(t *testing.T) {
	if _, err := New("manifestDir", "strict", nil); err == nil || !strings.Contains(err.Error(), "podSecurity.manifestDir.level") {
		t.Errorf("bad level: %v", err)
	}
	if _, err := New("manifestDir", "baseline", []string{"data"}); err == nil || !strings.Contains(err.Error(), "allowedHostPaths[0]: must be an absolute path") {
		t.Errorf("relative path: %v", err)
	}
}

// Filter drops what the policy refuses, one line per pod in its source's
// FileError, and keeps the rest.
func TestFilter(t *testing.T) {
	ok, bad := pod("ok", nil), pod("bad", privileged)
	snap := mustNew(t, "baseline").Filter(source.Snapshot{Pods: []*corev1.Pod{ok, bad}})
	if len(snap.Pods) != 1 || snap.Pods[0] != ok {
		t.Fatalf("pods %v", snap.Pods)
	}
	if len(snap.Errors) != 1 || snap.Errors[0].File != "https://cfg.example/pods.yaml" ||
		!strings.HasPrefix(snap.Errors[0].Error(), "https://cfg.example/pods.yaml: pod default/bad violates PodSecurity") {
		t.Fatalf("errors %v", snap.Errors)
	}
}
