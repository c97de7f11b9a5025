package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/config"
)

func TestAdvisoryResults(t *testing.T) {
	cases := []struct {
		component, out string
		want           []string // substrings of the warn lines, in order; nil: one ok line
	}{
		{"containerd", "v2.2.3", []string{"GO-2026-5378"}},
		{"containerd", "v2.2.4", nil},
		{"containerd", "v2.1.5", []string{"GO-2026-5378"}}, // end of life: no fix on 2.1
		{"containerd", "v2.0.3", []string{"GO-2026-5378", "GO-2025-3528"}},
		{"containerd", "v2.3.1", nil},
		{"containerd", "v2.4.0", nil},
		{"containerd", "1.6.40", []string{"GO-2026-5378"}},
		{"runc", "runc version 1.1.11\ncommit: v1.1.11\nspec: 1.0.2-dev", []string{"CVE-2025-31133", "CVE-2024-21626"}},
		{"runc", "runc version 1.2.8", nil},
		{"runc", "runc version 1.3.2", []string{"CVE-2025-31133"}},
		{"runc", "runc version 1.4.0-rc.2", []string{"CVE-2025-31133"}},
		{"runc", "runc version 1.4.0", nil},
		{"runc", "runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1", []string{"distribution build", "distribution build"}},
		{"cni-plugins", "CNI portmap plugin v1.8.0\nCNI protocol versions supported: 1.0.0", []string{"CVE-2025-67499"}},
		{"cni-plugins", "CNI portmap plugin v0.7.4", []string{"CVE-2025-67499", "CVE-2019-9946"}},
		{"cni-plugins", "CNI portmap plugin v1.9.0", nil},
	}
	for _, tc := range cases {
		res := advisoryResults(tc.component, tc.out)
		if tc.want == nil {
			if len(res) != 1 || res[0].Status != StatusOK {
				t.Errorf("%s %q: %v, want one ok line", tc.component, tc.out, res)
			}
			continue
		}
		if len(res) != len(tc.want) {
			t.Errorf("%s %q: %d lines %v, want %d", tc.component, tc.out, len(res), res, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if res[i].Status != StatusWarn || !strings.Contains(res[i].Detail, w) {
				t.Errorf("%s %q: line %d %s %q, want warn with %q", tc.component, tc.out, i, res[i].Status, res[i].Detail, w)
			}
		}
	}
	if r := advisoryResults("cni-plugins", "CNI portmap plugin version unknown"); len(r) != 1 || r[0].Status != StatusOK ||
		!strings.Contains(r[0].Detail, "advisories not checked") {
		t.Errorf("unknown version: %v", r)
	}
}

// check flags a vulnerable runtime, readable credentials and insecure
// settings; a clean host has none of these lines.
func TestSecurityChecks(t *testing.T) {
	cfg := checkHost(t)
	cfg.AuthFiles = nil
	p := fakeProbes(nil)
	versions := map[string]string{"runc": "runc version 1.1.11", "portmap": "CNI portmap plugin v1.9.0"}
	p.toolVersion = func(_ context.Context, path string) (string, error) { return versions[filepath.Base(path)], nil }
	p.lookPath = func(string) (string, error) { return "/usr/sbin/runc", nil }
	lines := func() string {
		var b strings.Builder
		for _, r := range securityChecks(context.Background(), cfg, "v2.2.9", p) {
			if r.Status != StatusOK {
				b.WriteString(string(r.Status) + " " + r.Name + " " + r.Detail + "\n")
			}
		}
		return b.String()
	}
	got := lines()
	if !strings.Contains(got, "warn runc-cves runc 1.1.11: CVE-2025-31133") || !strings.Contains(got, "CVE-2024-21626") || strings.Contains(got, "containerd") {
		t.Fatalf("runc 1.1.11, containerd 2.2.9:\n%s", got)
	}
	versions["runc"] = "runc version 1.3.3"
	if got := lines(); got != "" {
		t.Fatalf("clean host:\n%s", got)
	}

	conf := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(conf, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(conf, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Source = conf
	cfg.ManifestURL.ManifestURL = "http://cfg.example/pods"
	cfg.ManifestURLHeaders = map[string]string{"Authorization": "Bearer x"}
	cfg.AllowInsecureManifests = true
	cfg.MetricsAddress = "0.0.0.0:9100"
	got = lines()
	for _, want := range []string{
		"warn credentials " + conf + " holds manifestURL credentials and is readable by group or others (mode 0644)",
		"warn insecure-config manifestURL is http://",
		"warn insecure-config allowInsecureManifests",
		"warn insecure-config metricsAddress 0.0.0.0:9100",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	cfg.MetricsAddress = "127.0.0.1:9100"
	if strings.Contains(lines(), "metricsAddress") {
		t.Error("a loopback metrics address flagged")
	}

	// A manifest artifact no signature requirement covers.
	cfg.ManifestURL.ManifestURL, cfg.ManifestURLHeaders = "oci://registry.example.com/fleet/pods:1", nil
	const unsigned = "warn insecure-config manifestURL oci://registry.example.com/fleet/pods:1 is not covered by imagePolicy"
	if !strings.Contains(lines(), unsigned) {
		t.Errorf("an unsigned manifest artifact not flagged:\n%s", lines())
	}
	cfg.ImagePolicy = config.ImagePolicy{RequireSignatures: true, Keys: []string{"/k.pub"}, Images: []string{"registry.example.com/vendor"}}
	if !strings.Contains(lines(), unsigned) {
		t.Errorf("an artifact outside imagePolicy.images not flagged:\n%s", lines())
	}
	cfg.ImagePolicy.Images = append(cfg.ImagePolicy.Images, "registry.example.com/fleet")
	if strings.Contains(lines(), "not covered by imagePolicy") {
		t.Errorf("a covered artifact flagged:\n%s", lines())
	}
}
