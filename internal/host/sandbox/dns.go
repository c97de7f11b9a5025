package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	defaultResolv  = "/etc/resolv.conf"
	resolvedResolv = "/run/systemd/resolve/resolv.conf" // systemd-resolved's upstream servers

	// The API's limits (k8s.io/kubernetes/pkg/apis/core/validation
	// MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars) and
	// DNS1123SubdomainMaxLength, which the kubelet applies to every pod's
	// resolv.conf (network/dns formDNSConfigFitsLimits).
	maxNameservers     = 3
	maxSearches        = 32
	maxSearchListChars = 2048
	maxSearchLen       = 253

	// ReasonDNSConfigForming is the kubelet's warning event when the pod's
	// resolv.conf had to be cut to those limits.
	ReasonDNSConfigForming = "DNSConfigForming"
)

// resolvConf builds the pod's resolv.conf as the kubelet's GetPodDNS and
// containerd's parseDNSOptions do (PodDNSCluster): with the node's cluster
// DNS (WithClusterDNS), ClusterFirst pods ask it; without, the ClusterFirst
// policies fall back to Default (the host's file, parsed). None uses only
// spec.dnsConfig. Cutting it to the limits records a
// DNSConfigForming warning per cut line.
func (m *Manager) resolvConf(pod *corev1.Pod) ([]byte, error) {
	b, err := os.ReadFile(m.resolvSource(pod.Spec.HostNetwork))
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read host resolv.conf: %w", err)
	}
	host, err := ParseResolvConf(b)
	if err != nil {
		return nil, fmt.Errorf("parse host resolv.conf: %w", err)
	}
	servers, domain := m.clusterDNS, m.clusterDomain
	if m.podDNS != nil {
		if s, d, ok := m.podDNS(pod); ok {
			servers, domain = s, d
		}
	}
	rc, warnings := PodDNSCluster(host, pod, servers, domain)
	for _, w := range warnings {
		m.event(pod, corev1.EventTypeWarning, ReasonDNSConfigForming, w)
	}
	return rc.Format(), nil
}

// resolvSource picks the host file a pod starts from: the configured one, or
// /etc/resolv.conf — unless a pod with its own netns would only get the
// loopback systemd-resolved stub, then resolved's upstream file.
func (m *Manager) resolvSource(hostNetwork bool) string {
	if m.hostResolv != "" {
		return m.hostResolv
	}
	if hostNetwork {
		return defaultResolv
	}
	b, err := os.ReadFile(defaultResolv)
	if err != nil {
		return defaultResolv
	}
	if rc, err := ParseResolvConf(b); err == nil && onlyLoopback(rc.Nameservers) {
		if _, err := os.Stat(resolvedResolv); err == nil {
			return resolvedResolv
		}
	}
	return defaultResolv
}

func onlyLoopback(servers []string) bool {
	for _, s := range servers {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.IsLoopback() {
			return false
		}
	}
	return len(servers) > 0
}

// ResolvConf is the part of a resolv.conf the kubelet keeps.
type ResolvConf struct {
	Nameservers, Searches, Options []string
}

// ParseResolvConf is the kubelet's parseResolvConf: nameserver lines
// accumulate (one without an address is an error), the last search line
// wins ("." dropped, a trailing dot trimmed), options accumulate with a
// later option replacing an earlier one of the same name (in its place:
// the kubelet's order is a map's); "#" comments, domain, sortlist and
// anything else are ignored.
func ParseResolvConf(data []byte) (ResolvConf, error) {
	var rc ResolvConf
	var errs []error
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				errs = append(errs, errors.New("nameserver list is empty"))
				continue
			}
			rc.Nameservers = append(rc.Nameservers, f[1])
		case "search":
			rc.Searches = nil
			for _, s := range f[1:] {
				if s != "." {
					rc.Searches = append(rc.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			rc.Options = appendOptions(rc.Options, f[1:])
		}
	}
	return rc, errors.Join(errs...)
}

// appendOptions is the kubelet's: an option replaces the one of the same
// name (the text before ':') whole.
func appendOptions(options, more []string) []string {
	for _, o := range more {
		name, _, _ := strings.Cut(o, ":")
		i := indexOption(options, name)
		if i < 0 {
			options = append(options, o)
		} else {
			options[i] = o
		}
	}
	return options
}

func indexOption(options []string, name string) int {
	for i, o := range options {
		if n, _, _ := strings.Cut(o, ":"); n == name {
			return i
		}
	}
	return -1
}

// Format renders rc as containerd's parseDNSOptions: search, nameserver,
// options lines, each only when not empty.
func (rc ResolvConf) Format() []byte {
	var b bytes.Buffer
	if len(rc.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.Searches, " "))
	}
	for _, s := range rc.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(rc.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.Options, " "))
	}
	return b.Bytes()
}

// PodDNS is the kubelet's GetPodDNS without cluster DNS given the host's
// parsed file: policy None starts empty, every other policy from the host;
// spec.dnsConfig is appended (appendDNSConfig: duplicate nameservers and
// searches dropped, options merged by name); then the limits are applied
// (formDNSConfigFitsLimits). It returns the DNSConfigForming messages.
func PodDNS(host ResolvConf, pod *corev1.Pod) (ResolvConf, []string) {
	return PodDNSCluster(host, pod, nil, "")
}

// PodDNSCluster is the kubelet's GetPodDNS with the cluster DNS servers
// clusterDNS: a ClusterFirst pod without hostNetwork, or a
// ClusterFirstWithHostNet pod, gets them as nameservers, the search path
// <ns>.svc.<clusterDomain> svc.<clusterDomain> <clusterDomain> before the
// host's, and only the option ndots:5 (then spec.dnsConfig, then the
// limits, as PodDNS). Without servers those policies are Default.
func PodDNSCluster(host ResolvConf, pod *corev1.Pod, clusterDNS []string, clusterDomain string) (ResolvConf, []string) {
	rc := ResolvConf{
		Nameservers: append([]string(nil), host.Nameservers...),
		Searches:    append([]string(nil), host.Searches...),
		Options:     append([]string(nil), host.Options...),
	}
	switch {
	case pod.Spec.DNSPolicy == corev1.DNSNone:
		rc = ResolvConf{}
	case len(clusterDNS) > 0 && clusterFirst(pod):
		rc.Nameservers = append([]string(nil), clusterDNS...)
		rc.Searches = clusterSearches(rc.Searches, pod.Namespace, clusterDomain)
		rc.Options = []string{"ndots:5"} // the kubelet's defaultDNSOptions
	}
	if cfg := pod.Spec.DNSConfig; cfg != nil {
		rc.Nameservers = uniq(append(rc.Nameservers, cfg.Nameservers...))
		rc.Searches = uniq(append(rc.Searches, cfg.Searches...))
		rc.Options = mergeOptions(rc.Options, cfg.Options)
	}
	var warnings []string
	if len(rc.Nameservers) > maxNameservers {
		rc.Nameservers = rc.Nameservers[:maxNameservers]
		warnings = append(warnings, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: "+
			strings.Join(rc.Nameservers, " "))
	}
	var cut bool
	if rc.Searches, cut = fitSearches(rc.Searches); cut {
		warnings = append(warnings, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: "+
			strings.Join(rc.Searches, " "))
	}
	return rc, warnings
}

// fitSearches is the kubelet's formDNSSearchFitsLimits: at most 32
// domains, none over 253 characters, the line at most 2048 characters
// (cut from the end). It reports whether anything was dropped.
func fitSearches(searches []string) ([]string, bool) {
	cut := false
	if len(searches) > maxSearches {
		searches, cut = searches[:maxSearches], true
	}
	kept := searches[:0]
	for _, s := range searches {
		if len(s) > maxSearchLen {
			cut = true
			continue
		}
		kept = append(kept, s)
	}
	searches = kept
	for len(searches) > 0 && len(strings.Join(searches, " ")) > maxSearchListChars {
		searches, cut = searches[:len(searches)-1], true
	}
	return searches, cut
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeOptions is the kubelet's mergeDNSOptions: a dnsConfig option
// replaces the existing one of the same name; "name:" and "name" are the
// same option. Order: first appearance (the kubelet's is a map's).
func mergeOptions(existing []string, extra []corev1.PodDNSConfigOption) []string {
	var names []string
	vals := map[string]string{}
	set := func(name, val string) {
		if _, ok := vals[name]; !ok {
			names = append(names, name)
		}
		vals[name] = val
	}
	for _, o := range existing {
		name, val, _ := strings.Cut(o, ":")
		set(name, val)
	}
	for _, o := range extra {
		val := ""
		if o.Value != nil {
			val = *o.Value
		}
		set(o.Name, val)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if vals[n] == "" {
			out = append(out, n)
		} else {
			out = append(out, n+":"+vals[n])
		}
	}
	return out
}

// clusterFirst is the kubelet's getPodDNSType answering podDNSCluster.
func clusterFirst(pod *corev1.Pod) bool {
	switch pod.Spec.DNSPolicy {
	case corev1.DNSClusterFirstWithHostNet:
		return true
	case corev1.DNSClusterFirst, "":
		return !pod.Spec.HostNetwork
	}
	return false
}

// clusterSearches is the kubelet's generateSearchesForDNSClusterFirst.
func clusterSearches(hostSearch []string, namespace, clusterDomain string) []string {
	d := strings.TrimSuffix(clusterDomain, ".")
	if d == "" {
		return hostSearch
	}
	return uniq(append([]string{namespace + ".svc." + d, "svc." + d, d}, hostSearch...))
}
