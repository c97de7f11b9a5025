package spec

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Hostname returns the pod's hostname as the kubelet computes it:
// spec.hostnameOverride, else spec.hostname, else the pod name, cut to 63
// characters without a trailing '-' or '.'. hostNetwork pods use the host's
// hostname instead (HostLimits.Hostname).
func Hostname(pod *corev1.Pod) string {
	name := pod.Name
	switch {
	case pod.Spec.HostnameOverride != nil && *pod.Spec.HostnameOverride != "":
		name = *pod.Spec.HostnameOverride
	case pod.Spec.Hostname != "":
		name = pod.Spec.Hostname
	}
	const maxLen = 63
	if len(name) > maxLen {
		name = strings.TrimRight(name[:maxLen], "-.")
	}
	return name
}

// HostnameFile is the content of the pod's /etc/hostname: Hostname(pod), or
// hostHostname (the host's) for a hostNetwork pod, which shares the host's
// UTS namespace.
func HostnameFile(pod *corev1.Pod, hostHostname string) []byte {
	name := Hostname(pod)
	if pod.Spec.HostNetwork {
		name = hostHostname
	}
	return []byte(name + "\n")
}

const hostsHeader = "# Kubernetes-managed hosts file (podhost).\n"

// Hosts is the content of a pod's /etc/hosts (the kubelet's
// managedHostsFileContent): localhost entries, one line per pod IP with the
// hostname, then the pod's hostAliases.
func Hosts(hostname string, ips []string, aliases []corev1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString(hostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
	}
	b.Write(hostAliasEntries(aliases))
	return b.Bytes()
}

// HostNetworkHosts is the /etc/hosts of a hostNetwork pod: the host's file
// followed by the pod's hostAliases.
func HostNetworkHosts(hostFile []byte, aliases []corev1.HostAlias) []byte {
	out := append([]byte(nil), hostFile...)
	return append(out, hostAliasEntries(aliases)...)
}

func hostAliasEntries(aliases []corev1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

// DNS limits the kubelet enforces (formDNSConfigFitsLimits).
const (
	maxNameservers    = 3
	maxSearches       = 32
	maxSearchesLength = 2048
)

type dnsConfig struct {
	servers, searches, options []string
}

// Resolv is the content of the pod's /etc/resolv.conf. There is no cluster
// DNS, so every dnsPolicy but None starts from the host's resolv.conf (the
// kubelet's fallback); None starts empty. spec.dnsConfig is then merged in
// (nameservers and searches appended without duplicates, options by name)
// and the result cut to the kubelet's limits. Loopback nameservers of the
// host (127.0.0.53 of systemd-resolved) are dropped for pods with their own
// network namespace, where they cannot answer: give the sandbox the
// upstream file (/run/systemd/resolve/resolv.conf) on such hosts.
func Resolv(hostResolv []byte, pod *corev1.Pod) []byte {
	var cfg dnsConfig
	if pod.Spec.DNSPolicy != corev1.DNSNone {
		cfg = parseResolv(hostResolv)
		if !pod.Spec.HostNetwork {
			cfg.servers = withoutLoopback(cfg.servers)
		}
	}
	if d := pod.Spec.DNSConfig; d != nil {
		cfg.servers = appendUnique(cfg.servers, d.Nameservers...)
		cfg.searches = appendUnique(cfg.searches, d.Searches...)
		cfg.options = mergeOptions(cfg.options, d.Options)
	}
	if len(cfg.servers) > maxNameservers {
		cfg.servers = cfg.servers[:maxNameservers]
	}
	cfg.searches = fitSearches(cfg.searches)
	var b strings.Builder
	if len(cfg.searches) > 0 {
		b.WriteString("search " + strings.Join(cfg.searches, " ") + "\n")
	}
	for _, s := range cfg.servers {
		b.WriteString("nameserver " + s + "\n")
	}
	if len(cfg.options) > 0 {
		b.WriteString("options " + strings.Join(cfg.options, " ") + "\n")
	}
	return []byte(b.String())
}

// parseResolv reads nameserver, search (the last one wins) and options
// lines like the kubelet's parseResolvConf.
func parseResolv(data []byte) dnsConfig {
	var cfg dnsConfig
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "nameserver":
			cfg.servers = append(cfg.servers, fields[1])
		case "search":
			cfg.searches = nil
			for _, s := range fields[1:] {
				if s != "." {
					cfg.searches = append(cfg.searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.options = mergeOptionStrings(cfg.options, fields[1:])
		}
	}
	return cfg
}

func withoutLoopback(servers []string) []string {
	var out []string
	for _, s := range servers {
		if ip, err := netip.ParseAddr(s); err == nil && ip.IsLoopback() {
			continue
		}
		out = append(out, s)
	}
	return out
}

func appendUnique(list []string, add ...string) []string {
	for _, a := range add {
		dup := false
		for _, l := range list {
			dup = dup || l == a
		}
		if !dup {
			list = append(list, a)
		}
	}
	return list
}

// mergeOptionStrings merges "name[:value]" options; a later one replaces
// an earlier one of the same name in place.
func mergeOptionStrings(opts, add []string) []string {
	for _, a := range add {
		name, _, _ := strings.Cut(a, ":")
		replaced := false
		for i, o := range opts {
			if n, _, _ := strings.Cut(o, ":"); n == name {
				opts[i], replaced = a, true
			}
		}
		if !replaced {
			opts = append(opts, a)
		}
	}
	return opts
}

func mergeOptions(opts []string, add []corev1.PodDNSConfigOption) []string {
	list := make([]string, 0, len(add))
	for _, o := range add {
		if o.Value != nil && *o.Value != "" {
			list = append(list, o.Name+":"+*o.Value)
		} else {
			list = append(list, o.Name)
		}
	}
	return mergeOptionStrings(opts, list)
}

// fitSearches keeps at most 32 search domains and 2048 characters.
func fitSearches(searches []string) []string {
	if len(searches) > maxSearches {
		searches = searches[:maxSearches]
	}
	for len(searches) > 0 && len(strings.Join(searches, " ")) > maxSearchesLength {
		searches = searches[:len(searches)-1]
	}
	return searches
}
