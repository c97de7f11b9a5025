package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	defaultResolv  = "/etc/resolv.conf"
	resolvedResolv = "/run/systemd/resolve/resolv.conf" // systemd-resolved's upstream servers
	maxNameservers = 3                                  // glibc uses at most 3
	maxSearches    = 32
)

// resolvConf builds the pod's resolv.conf. There is no cluster DNS, so the
// ClusterFirst policies behave like Default (the host's file); None uses only
// spec.dnsConfig. Without a dnsConfig the host's file is copied verbatim.
func (m *Manager) resolvConf(pod *corev1.Pod) ([]byte, error) {
	none := pod.Spec.DNSPolicy == corev1.DNSNone
	var host []byte
	if !none {
		b, err := os.ReadFile(m.resolvSource(pod.Spec.HostNetwork))
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("read host resolv.conf: %w", err)
		}
		host = b
	}
	return PodResolvConf(host, none, pod.Spec.DNSConfig), nil
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
	if onlyLoopback(ParseResolvConf(b).Nameservers) {
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

// ResolvConf is the part of a resolv.conf podhost understands.
type ResolvConf struct {
	Nameservers, Searches, Options []string
}

// ParseResolvConf reads nameserver, search (and domain, when there is no
// search line) and options lines; the last search/domain line wins, options
// accumulate.
func ParseResolvConf(data []byte) ResolvConf {
	var rc ResolvConf
	var domain []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				rc.Nameservers = append(rc.Nameservers, f[1])
			}
		case "search":
			rc.Searches, domain = f[1:], nil
		case "domain":
			if len(f) > 1 && rc.Searches == nil {
				domain = f[1:2]
			}
		case "options":
			rc.Options = append(rc.Options, f[1:]...)
		}
	}
	if rc.Searches == nil {
		rc.Searches = domain
	}
	return rc
}

// Format renders rc in resolv.conf syntax.
func (rc ResolvConf) Format() []byte {
	var b bytes.Buffer
	for _, s := range rc.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(rc.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.Searches, " "))
	}
	if len(rc.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.Options, " "))
	}
	return b.Bytes()
}

// PodResolvConf is the pod's resolv.conf given the host's (nil when none or
// policy None): the host file verbatim when there is no dnsConfig; else the
// host's entries with dnsConfig appended (duplicates dropped, options
// overridden by name), like kubelet's appendDNSConfig.
func PodResolvConf(host []byte, policyNone bool, cfg *corev1.PodDNSConfig) []byte {
	if policyNone {
		host = nil
	}
	if cfg == nil {
		if host == nil {
			return []byte{}
		}
		return host
	}
	rc := ParseResolvConf(host)
	rc.Nameservers = uniq(append(rc.Nameservers, cfg.Nameservers...))
	rc.Searches = uniq(append(rc.Searches, cfg.Searches...))
	rc.Options = mergeOptions(rc.Options, cfg.Options)
	if len(rc.Nameservers) > maxNameservers {
		rc.Nameservers = rc.Nameservers[:maxNameservers]
	}
	if len(rc.Searches) > maxSearches {
		rc.Searches = rc.Searches[:maxSearches]
	}
	return rc.Format()
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

// mergeOptions keeps the order of first appearance; a later option with the
// same name replaces the value.
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
