package config

import (
	"errors"
	"fmt"
	"path/filepath"

	psaapi "k8s.io/pod-security-admission/api"
)

// Security holds the trust boundary's settings (docs/security.md).
type Security struct {
	// SeccompDefault gives containers that set no seccompProfile (pod or
	// container) RuntimeDefault, containerd's default profile, as the
	// kubelet's seccompDefault. Default true: podhost has no installed base
	// to keep unconfined (docs/decisions.md 24). Privileged containers
	// stay unconfined; seccompProfile: {type: Unconfined} opts out.
	SeccompDefault bool
	// PodSecurity is the Pod Security Standard of each manifest source
	// (internal/desired/podsecurity). Key podSecurity.
	PodSecurity PodSecurity
	// ImagePolicy: which images must be signed, by which keys
	// (imagepolicy.go). Key imagePolicy.
	ImagePolicy ImagePolicy
}

// PodSecurity: one standard per source.
type PodSecurity struct {
	ManifestDir PodSecurityPolicy // default privileged: the machine owner's files
	ManifestURL PodSecurityPolicy // default baseline
	// Cluster: the pods the cluster's API server binds to this node
	// (docs/cluster.md), default baseline: what the cluster may run here.
	Cluster PodSecurityPolicy
}

// PodSecurityPolicy is one source's standard.
type PodSecurityPolicy struct {
	// Level is privileged, baseline or restricted (the Pod Security
	// Standards).
	Level string
	// AllowedHostPaths, when set, are the only host paths (and what lies
	// below them) the source's hostPath volumes may name; those volumes
	// are then allowed at any level.
	AllowedHostPaths []string
}

// securityFile is Security's on-disk form (inlined in file).
type securityFile struct {
	SeccompDefault *bool            `json:"seccompDefault"`
	PodSecurity    *podSecurityFile `json:"podSecurity"`
	ImagePolicy    *imagePolicyFile `json:"imagePolicy"`
}

type podSecurityFile struct {
	ManifestDir *podSecurityPolicyFile `json:"manifestDir"`
	ManifestURL *podSecurityPolicyFile `json:"manifestURL"`
	Cluster     *podSecurityPolicyFile `json:"cluster"`
}

type podSecurityPolicyFile struct {
	Level            *string  `json:"level"`
	AllowedHostPaths []string `json:"allowedHostPaths"`
}

func defaultSecurity() Security {
	return Security{SeccompDefault: true, PodSecurity: PodSecurity{
		ManifestDir: PodSecurityPolicy{Level: string(psaapi.LevelPrivileged)},
		ManifestURL: PodSecurityPolicy{Level: string(psaapi.LevelBaseline)},
		Cluster:     PodSecurityPolicy{Level: string(psaapi.LevelBaseline)},
	}}
}

func (f *securityFile) applyTo(s *Security) {
	if f.SeccompDefault != nil {
		s.SeccompDefault = *f.SeccompDefault
	}
	if f.PodSecurity != nil {
		f.PodSecurity.ManifestDir.applyTo(&s.PodSecurity.ManifestDir)
		f.PodSecurity.ManifestURL.applyTo(&s.PodSecurity.ManifestURL)
		f.PodSecurity.Cluster.applyTo(&s.PodSecurity.Cluster)
	}
	f.ImagePolicy.applyTo(&s.ImagePolicy)
}

func (f *podSecurityPolicyFile) applyTo(p *PodSecurityPolicy) {
	if f == nil {
		return
	}
	setString(&p.Level, f.Level)
	if f.AllowedHostPaths != nil {
		p.AllowedHostPaths = f.AllowedHostPaths
	}
}

func (s Security) validate() error {
	return errors.Join(s.PodSecurity.ManifestDir.validate("manifestDir"), s.PodSecurity.ManifestURL.validate("manifestURL"),
		s.PodSecurity.Cluster.validate("cluster"),
		s.ImagePolicy.validate())
}

func (p PodSecurityPolicy) validate(key string) error {
	var errs []error
	if _, err := psaapi.ParseLevel(p.Level); err != nil {
		errs = append(errs, fmt.Errorf("podSecurity.%s.level: %w", key, err))
	}
	for i, h := range p.AllowedHostPaths {
		if !filepath.IsAbs(h) {
			errs = append(errs, fmt.Errorf("podSecurity.%s.allowedHostPaths[%d]: must be an absolute path, got %q", key, i, h))
		}
	}
	return errors.Join(errs...)
}
