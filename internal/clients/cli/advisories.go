package cli

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// advisory is a published vulnerability of a component podhost runs on,
// with the first fixed version of each release branch that has one.
type advisory struct {
	Component string   // "containerd", "runc", "cni-plugins"
	IDs       []string // CVE, GHSA, Go vulnerability database IDs
	Summary   string
	Fixed     []string // e.g. 1.7.32, 2.0.9, 2.2.4, 2.3.1
}

// advisories is the list `podhost check` compares the installed versions
// with: the high-impact advisories of the runtime below podhost. Each
// entry's fixed versions were checked against the project's release
// notes or advisory (docs/security.md, "podhost check"); keep it short and
// add to it when one is published.
var advisories = []advisory{
	{"containerd", []string{"CVE-2026-46680", "GHSA-fqw6-gf59-qr4w", "GO-2026-5378"},
		"a numeric USER beyond 32 bits is looked up as a user name: an image can run as root despite runAsNonRoot (oci.WithUser)",
		[]string{"1.7.32", "2.0.9", "2.2.4", "2.3.1"}},
	{"containerd", []string{"CVE-2024-40635", "GHSA-265r-hfxg-fhmg", "GO-2025-3528"},
		"a UID:GID above 2^31-1 overflows and the container runs as root",
		[]string{"1.6.38", "1.7.27", "2.0.4"}},
	{"runc", []string{"CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"},
		"masked paths, /dev/console and /proc writes can be redirected: container breakout",
		[]string{"1.2.8", "1.3.3", "1.4.0"}},
	{"runc", []string{"CVE-2024-21626", "GHSA-xr7r-f8xq-vfvv"},
		"leaked file descriptor to the host's /sys/fs/cgroup (\"Leaky Vessels\"): container breakout",
		[]string{"1.1.12"}},
	{"cni-plugins", []string{"CVE-2025-67499", "GHSA-jv3w-x3r3-g6rm", "GO-2025-4222"},
		"portmap's nftables backend forwards traffic to the host port's number whatever its destination IP",
		[]string{"1.9.0"}},
	{"cni-plugins", []string{"CVE-2019-9946"},
		"portmap's rules are put before the host's own (iptables), bypassing its firewall",
		[]string{"0.7.5"}},
}

// semverRE finds the version in a tool's output ("runc version 1.1.12",
// "CNI portmap plugin v1.9.0", "v2.2.9").
var semverRE = regexp.MustCompile(`v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)(\S*)`)

// parseToolVersion returns the version in out and whether it carries a
// distribution suffix ("1.1.5+ds1-1+deb12u1"): such a build may have the
// fix as a patch. nil when out holds no version ("version unknown").
func parseToolVersion(out string) (*version.Version, bool) {
	m := semverRE.FindStringSubmatch(firstLine(out)) // not "CNI protocol versions supported: 0.1.0, …"
	if m == nil {
		return nil, false
	}
	v, err := version.Parse(m[1])
	if err != nil {
		return nil, false
	}
	return v, m[2] != ""
}

// affected reports whether v is below the fix of its release branch (same
// major.minor), or, on a branch without a fix of its own, below the newest
// fix (an older or end-of-life branch).
func (a advisory) affected(v *version.Version) bool {
	var newest *version.Version
	for _, f := range a.Fixed {
		fv := version.MustParse(f)
		if fv.Major() == v.Major() && fv.Minor() == v.Minor() {
			return v.LessThan(fv)
		}
		if newest == nil || newest.LessThan(fv) {
			newest = fv
		}
	}
	return newest != nil && v.LessThan(newest)
}

// advisoryResults checks a component's version output against the list:
// one warn line per advisory that applies, else one ok line.
func advisoryResults(component, out string) []CheckResult {
	name := component + "-cves"
	v, distro := parseToolVersion(out)
	if v == nil {
		what := "no version printed"
		if line := firstLine(out); line != "" {
			what = fmt.Sprintf("%q", line)
		}
		return []CheckResult{{name, StatusOK, "version unknown (" + what + "): advisories not checked"}}
	}
	var res []CheckResult
	for _, a := range advisories {
		if a.Component != component || !a.affected(v) {
			continue
		}
		d := fmt.Sprintf("%s %s: %s (%s); fixed in %s", component, v, strings.Join(a.IDs, ", "), a.Summary, strings.Join(a.Fixed, ", "))
		if distro {
			d += fmt.Sprintf("; %q is a distribution build, which may carry the fix as a patch: check its advisory", firstLine(out))
		}
		res = append(res, CheckResult{name, StatusWarn, d})
	}
	if res == nil {
		res = []CheckResult{{name, StatusOK, fmt.Sprintf("%s %s: no known advisory in podhost's list", component, v)}}
	}
	return res
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
