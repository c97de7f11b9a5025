package config

// Security holds the trust boundary's settings (docs/security.md).
type Security struct {
	// SeccompDefault gives containers that set no seccompProfile (pod or
	// container) RuntimeDefault, containerd's default profile, as the
	// kubelet's seccompDefault. Default true: podhost has no installed base
	// to keep unconfined (docs/decisions.md 24). Privileged containers
	// stay unconfined; seccompProfile: {type: Unconfined} opts out.
	SeccompDefault bool
}

// securityFile is Security's on-disk form (inlined in file).
type securityFile struct {
	SeccompDefault *bool `json:"seccompDefault"`
}

func defaultSecurity() Security { return Security{SeccompDefault: true} }

func (f *securityFile) applyTo(s *Security) {
	if f.SeccompDefault != nil {
		s.SeccompDefault = *f.SeccompDefault
	}
}
