package cli

import (
	"context"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/host/imagesig"
)

// securityChecks: the runtime's versions against the advisory list
// (containerd, runc, the CNI plugins), credentials other users can read
// (the config file, auth files) and settings that weaken podhost's trust
// boundary (an http:// manifest URL, an unsigned manifest artifact, unchecked manifests, /metrics on a
// non-loopback address).
func securityChecks(ctx context.Context, cfg *config.Config, containerdVersion string, p probes) []CheckResult {
	var out []CheckResult
	if containerdVersion != "" {
		out = append(out, advisoryResults("containerd", containerdVersion)...)
	}
	if p.toolVersion != nil {
		if path, err := p.lookPath("runc"); err == nil {
			if v, err := p.toolVersion(ctx, path); err == nil {
				out = append(out, advisoryResults("runc", v)...)
			}
		}
		if dir := findExecutable("portmap", cfg.CNIBinDirs); dir != "" {
			if v, err := p.toolVersion(ctx, filepath.Join(dir, "portmap")); err == nil {
				out = append(out, advisoryResults("cni-plugins", v)...)
			}
		}
	}
	for _, line := range cfg.ExposedCredentials() {
		out = append(out, CheckResult{"credentials", StatusWarn, line})
	}
	return append(out, insecureSettings(cfg)...)
}

// insecureSettings flags the configuration keys that open podhost up.
func insecureSettings(cfg *config.Config) []CheckResult {
	var out []CheckResult
	if u, err := url.Parse(cfg.ManifestURL.ManifestURL); err == nil && u.Scheme == "http" {
		out = append(out, CheckResult{"insecure-config", StatusWarn,
			"manifestURL is http:// (manifestURLAllowHTTP): the pods and manifestURLHeaders travel in clear text and anyone on the path can change them; use https://"})
	}
	if ref, ok := strings.CutPrefix(cfg.ManifestURL.ManifestURL, "oci://"); ok && !artifactSigned(cfg, ref) {
		out = append(out, CheckResult{"insecure-config", StatusWarn,
			"manifestURL " + cfg.ManifestURL.ManifestURL + " is not covered by imagePolicy (requireSignatures and its images): whoever can push to the repository decides which pods run; sign the artifact and cover it"})
	}
	if cfg.AllowInsecureManifests {
		out = append(out, CheckResult{"insecure-config", StatusWarn,
			"allowInsecureManifests: manifest files anyone can write are run (development only)"})
	}
	if host, _, err := net.SplitHostPort(cfg.MetricsAddress); err == nil && !isLoopback(host) {
		out = append(out, CheckResult{"insecure-config", StatusWarn,
			"metricsAddress " + cfg.MetricsAddress + " serves /metrics (pod names, images) without authentication beyond this machine; bind it to 127.0.0.1 or firewall it"})
	}
	return out
}

// artifactSigned: the image policy requires a signature of the manifest
// artifact ref (as the daemon's oci:// source applies it).
func artifactSigned(cfg *config.Config, ref string) bool {
	p := cfg.ImagePolicy
	return imagesig.Policy{RequireSignatures: p.RequireSignatures, Keys: p.Keys, Images: p.Images}.Covers(ref)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// toolVersion runs a runtime binary for its version: `runc --version`; a
// CNI plugin run without CNI_COMMAND prints "CNI portmap plugin v1.9.0".
func toolVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var args []string
	if filepath.Base(path) == "runc" {
		args = []string{"--version"}
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"} // no CNI_COMMAND
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
