// Package podsecurity holds the pods of each manifest source to a Pod
// Security Standard (privileged, baseline, restricted), evaluated by the
// upstream Pod Security Admission library (k8s.io/pod-security-admission:
// its checks, at their latest version, and its messages), as a namespace's
// pod-security.kubernetes.io/enforce label makes the API server do. A
// source may also list the host paths its pods may mount (hostPath
// volumes under them are then the only ones allowed, and are exempt from
// the level's hostPath checks).
//
// A refused pod does not run: the source's snapshot goes on without it
// and with a line naming the source, the pod, the config key, the level
// and the library's reason (which names the field), e.g.
//
//	https://cfg/pods.yaml: pod default/web violates PodSecurity "baseline:latest" (podSecurity.manifestURL): privileged (container "app" must not set securityContext.privileged=true)
//
// Nothing else changes: the source's other pods run.
package podsecurity

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/podhost/podhost/internal/desired/source"
)

// Policy is one source's standard. The zero value lets every pod through.
type Policy struct {
	// Key names the source's settings in the config, for messages
	// ("manifestDir", "manifestURL").
	Key   string
	Level psaapi.Level
	// AllowedHostPaths, when not empty, are the host paths (and what lies
	// below them) the source's hostPath volumes may name.
	AllowedHostPaths []string
}

// New returns the policy for config key with level (privileged, baseline
// or restricted) and an optional hostPath allow-list (absolute paths).
func New(key, level string, allowedHostPaths []string) (Policy, error) {
	l, err := psaapi.ParseLevel(level)
	if err != nil {
		return Policy{}, fmt.Errorf("podSecurity.%s.level: %w", key, err)
	}
	p := Policy{Key: key, Level: l}
	for i, h := range allowedHostPaths {
		if !filepath.IsAbs(h) {
			return Policy{}, fmt.Errorf("podSecurity.%s.allowedHostPaths[%d]: must be an absolute path, got %q", key, i, h)
		}
		p.AllowedHostPaths = append(p.AllowedHostPaths, filepath.Clean(h))
	}
	return p, nil
}

// Permissive reports whether the policy lets every pod through.
func (p Policy) Permissive() bool {
	return p.privileged() && len(p.AllowedHostPaths) == 0
}

func (p Policy) privileged() bool { return p.Level == "" || p.Level == psaapi.LevelPrivileged }

var evaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	return policy.NewEvaluator(policy.DefaultChecks(), nil)
})

// Check returns nil when pod meets the policy, else why not (one line).
func (p Policy) Check(pod *corev1.Pod) error {
	spec := &pod.Spec
	if len(p.AllowedHostPaths) > 0 {
		var err error
		if spec, err = p.withoutAllowedHostPaths(pod); err != nil {
			return err
		}
	}
	if p.privileged() {
		return nil
	}
	ev, err := evaluator()
	if err != nil {
		return fmt.Errorf("pod security: %w", err)
	}
	lv := psaapi.LevelVersion{Level: p.Level, Version: psaapi.LatestVersion()}
	res := policy.AggregateCheckResults(ev.EvaluatePod(lv, &pod.ObjectMeta, spec))
	if res.Allowed {
		return nil
	}
	return fmt.Errorf("pod %s/%s violates PodSecurity %q (podSecurity.%s): %s",
		pod.Namespace, pod.Name, lv.String(), p.Key, res.ForbiddenDetail())
}

// withoutAllowedHostPaths returns pod's spec without its hostPath volumes,
// once each is found under an allowed path (lexically and with the host's
// symlinks resolved), so that the level's checks do not count them.
func (p Policy) withoutAllowedHostPaths(pod *corev1.Pod) (*corev1.PodSpec, error) {
	spec := pod.Spec.DeepCopy()
	var errs []error
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool {
		if v.HostPath == nil {
			return false
		}
		if !p.allowed(v.HostPath.Path) {
			errs = append(errs, fmt.Errorf("pod %s/%s: hostPath volume %q (%s) is not under podSecurity.%s.allowedHostPaths",
				pod.Namespace, pod.Name, v.Name, v.HostPath.Path, p.Key))
		}
		return true
	})
	return spec, errors.Join(errs...)
}

// allowed: path is an allowed path or below one, as written and as the
// host resolves it now (a symlink below an allowed path may point out).
func (p Policy) allowed(path string) bool {
	clean := filepath.Clean(path)
	real := resolve(clean)
	for _, a := range p.AllowedHostPaths {
		if under(clean, a) && under(real, resolve(a)) {
			return true
		}
	}
	return false
}

func under(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// resolve follows the symlinks of the longest existing part of path.
func resolve(path string) string {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest)
		}
		if !errors.Is(err, fs.ErrNotExist) || p == "/" {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// Filter drops the pods of snap that p refuses (source.Snapshot.Refuse).
func (p Policy) Filter(snap source.Snapshot) source.Snapshot {
	if p.Permissive() {
		return snap
	}
	refused := map[*corev1.Pod]error{}
	for _, pod := range snap.Pods {
		if err := p.Check(pod); err != nil {
			refused[pod] = err
		}
	}
	return snap.Refuse(refused)
}
