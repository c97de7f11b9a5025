package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/spec"
)

// writeFiles writes hostname, resolv.conf and the initial hosts (no pod IP
// yet: WriteHosts adds it once the network is up).
func (m *Manager) writeFiles(p *Paths, _ *undoStack, pod *corev1.Pod) error {
	p.Hostname = filepath.Join(p.Dir, fileHostname)
	p.Resolv = filepath.Join(p.Dir, fileResolv)
	p.Hosts = filepath.Join(p.Dir, fileHosts)
	hostname, err := m.hostname(pod)
	if err != nil {
		return err
	}
	if err := writeAtomic(p.Hostname, []byte(hostname+"\n")); err != nil {
		return err
	}
	resolv, err := m.resolvConf(pod)
	if err != nil {
		return err
	}
	if err := writeAtomic(p.Resolv, resolv); err != nil {
		return err
	}
	return m.WriteHosts(*p, pod, nil)
}

// The kubelet's hosts file headers (kubelet_pods.go).
const (
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// WriteHosts (re)writes the pod's hosts file as the kubelet's
// ensureHostsFile, which makeMounts calls before every container start: the
// managed localhost block, "<ip>\t<hostname>" for each pod IP, then
// spec.hostAliases; hostNetwork pods get the host's current /etc/hosts plus
// the aliases. The file is rewritten in place (same inode), so containers
// that already bind-mount it see the new content too.
func (m *Manager) WriteHosts(p Paths, pod *corev1.Pod, ips []string) error {
	path := p.Hosts
	if path == "" {
		if p.Dir == "" {
			return fmt.Errorf("sandbox: write hosts: no sandbox dir")
		}
		path = filepath.Join(p.Dir, fileHosts)
	}
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		host, err := os.ReadFile(m.hostHosts)
		if err != nil {
			return fmt.Errorf("sandbox: read host hosts file: %w", err)
		}
		b.WriteString(managedHostsHeaderWithHostNetwork)
		b.Write(host)
	} else {
		b.Write(managedHosts(spec.Hostname(pod), spec.Domain(pod, m.clusterDomain), ips))
	}
	b.Write(hostAliases(pod.Spec.HostAliases))
	if err := writeInPlace(path, b.Bytes()); err != nil {
		return fmt.Errorf("sandbox: write hosts %s: %w", path, err)
	}
	return nil
}

// writeInPlace is os.WriteFile then chmod 0644, as the kubelet writes the
// hosts file: truncating the existing inode, never replacing it. A file
// that already holds data is left alone: the pod's running containers
// would otherwise read it empty while it is rewritten before every start.
func writeInPlace(path string, data []byte) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return os.Chmod(path, 0o644)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

// hostname is what the pod's /etc/hostname and UTS namespace hold: the
// host's for hostNetwork pods, else the kubelet's GetNodenameForKernel.
func (m *Manager) hostname(pod *corev1.Pod) (string, error) {
	if pod.Spec.HostNetwork {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("host name: %w", err)
		}
		return h, nil
	}
	return spec.KernelHostname(pod, m.clusterDomain)
}

// managedHosts is the hosts file of a pod with its own network namespace:
// the kubelet's managedHostsFileContent, "<ip>\t<hostname>.<domain>\t<hostname>"
// per pod IP when the pod has a domain (spec.subdomain).
func managedHosts(hostname, domain string, ips []string) []byte {
	var b bytes.Buffer
	b.WriteString(managedHostsHeader)
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	return b.Bytes()
}

// hostAliases renders spec.hostAliases like kubelet does.
func hostAliases(aliases []corev1.HostAlias) []byte {
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

// writeAtomic writes data to path via a temp file in the same dir + rename.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}
