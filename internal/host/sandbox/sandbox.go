// Package sandbox makes a pod's sandbox without a pause container (see docs/ARCHITECTURE.md): pinned (bind-mounted) network, IPC and UTS namespaces, a
// /dev/shm tmpfs, and the hosts, resolv.conf and hostname files the pod's
// containers bind-mount.
//
// Layout, for sandbox id <id> under runDir (default /run/podhost):
//
//	<runDir>/netns/<id>/cni-<random>     net ns (containerd pkg/netns)
//	<runDir>/sandboxes/<id>/             0700
//	                        ipc, uts     pinned namespaces (nsfs bind mounts)
//	                        pid          shareProcessNamespace: pinned PID namespace,
//	                        pause.pid    and its PID 1 (pidns.go)
//	                        shm/         tmpfs, 64Mi, nosuid,nodev,noexec
//	                        hosts, resolv.conf, hostname
//
// Everything a sandbox pins or mounts lives below one of two directories
// whose paths follow from its id: a caller that records Dir(id) before
// Create can remove whatever a crash in the middle of Create left with
// Remove(Paths{Dir: Dir(id)}), which clears <runDir>/netns/<id> too.
//
// Kubernetes semantics: hostNetwork pods use the host's net and UTS
// namespaces (NetNS and UTS are "") and the host's hosts/resolv.conf/hostname
// content; hostIPC pods use the host's IPC namespace and /dev/shm (IPC and
// Shm are ""). Everything lives under /run, so a reboot empties it; Exists
// tells whether a recorded namespace is still pinned.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/pkg/netns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// Paths of one sandbox. "" means the host's (namespace, shm) or not made.
type Paths struct {
	Dir, NetNS, IPC, UTS, Hosts, Resolv, Hostname, Shm string
	// User is the pod's pinned user namespace (hostUsers: false), which
	// owns its NetNS, IPC and UTS; "" is the host's.
	User string
	// PID is the pod's pinned PID namespace (shareProcessNamespace: true);
	// "" when each container has its own (or the host's, hostPID).
	PID string
}

// File names inside the sandbox dir.
const (
	fileIPC      = "ipc"
	fileUTS      = "uts"
	dirShm       = "shm"
	fileHosts    = "hosts"
	fileResolv   = "resolv.conf"
	fileHostname = "hostname"
)

// ShmSize is the size of the pod's /dev/shm tmpfs.
const ShmSize = 64 << 20

// Manager creates and removes sandboxes under a run dir.
type Manager struct {
	runDir     string
	sandboxDir string
	hostResolv string // "" = auto (see resolvSource)
	hostHosts  string
	// clusterDomain is the kubelet's clusterDomain (spec.Domain).
	clusterDomain string
	// clusterDNS are the nameservers of ClusterFirst pods (WithClusterDNS).
	clusterDNS []string
	// podDNS picks another cluster's DNS for some pods (WithPodDNS).
	podDNS   func(pod *corev1.Pod) (servers []string, domain string, ok bool)
	log      *slog.Logger
	recorder func(uid types.UID, typ, reason, message string)
	pause    func() []string         // PID 1 of shared PID namespaces (WithPause)
	failAt   func(step string) error // test hook, nil in production
}

// Option configures a Manager.
type Option func(*Manager)

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(m *Manager) { m.log = l } }

// WithHostResolvConf sets the host resolv.conf pods start from (default:
// /etc/resolv.conf, or systemd-resolved's upstream file when /etc/resolv.conf
// only points at the 127.0.0.53 stub, which a pod netns cannot reach).
func WithHostResolvConf(path string) Option { return func(m *Manager) { m.hostResolv = path } }

// WithRecorder sets where the pod events the kubelet records while forming
// the sandbox's files go (DNSConfigForming); default: logged only.
func WithRecorder(f func(uid types.UID, typ, reason, message string)) Option {
	return func(m *Manager) { m.recorder = f }
}

// WithClusterDomain sets the cluster domain of pods' subdomain FQDNs
// (hosts file, setHostnameAsFQDN); default "".
func WithClusterDomain(d string) Option { return func(m *Manager) { m.clusterDomain = d } }

// WithClusterDNS sets the node's cluster DNS servers: the nameservers of
// ClusterFirst pods, with the cluster's search path (PodDNSCluster).
func WithClusterDNS(servers ...string) Option { return func(m *Manager) { m.clusterDNS = servers } }

// WithPodDNS sets the DNS servers and cluster domain of the ClusterFirst
// pods for which f says ok (the pods from a cluster's API server, with the
// cluster's DNS configured) in their resolv.conf, instead of
// WithClusterDNS's and WithClusterDomain's.
func WithPodDNS(f func(pod *corev1.Pod) (servers []string, domain string, ok bool)) Option {
	return func(m *Manager) { m.podDNS = f }
}

// NewManager returns a Manager for runDir (e.g. /run/podhost).
func NewManager(runDir string, opts ...Option) *Manager {
	m := &Manager{
		runDir:     runDir,
		sandboxDir: filepath.Join(runDir, "sandboxes"),
		hostHosts:  "/etc/hosts",
		log:        slog.Default(),
	}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Create makes the sandbox for pod. uns, when not nil, is the pod's user
// namespace range (hostUsers: false): the sandbox then pins a user
// namespace with that mapping, owning the pod's other namespaces. On error
// everything it made is undone.
func (m *Manager) Create(ctx context.Context, id string, pod *corev1.Pod, uns *records.UserNSRecord) (p Paths, err error) {
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return Paths{}, fmt.Errorf("sandbox: invalid id %q", id)
	}
	var u undoStack
	defer func() {
		if err != nil {
			if uerr := u.run(); uerr != nil {
				m.log.Error("sandbox: rollback incomplete", "sandbox", id, "err", uerr)
			}
		}
	}()
	p = Paths{Dir: m.Dir(id)}
	steps := []struct {
		name string
		fn   func(*Paths, *undoStack, *corev1.Pod) error
	}{
		{"dir", m.makeDir},
		{"userns", func(p *Paths, u *undoStack, pod *corev1.Pod) error { return m.pinUserNS(p, u, pod, uns) }},
		{"netns", m.makeNetNS},
		{"ipcuts", m.pinIPCUTS},
		{"pidns", m.pinPIDNS},
		{"shm", m.mountShm},
		{"files", m.writeFiles},
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return Paths{}, fmt.Errorf("sandbox %s: %w", id, err)
		}
		if err := s.fn(&p, &u, pod); err != nil {
			return Paths{}, fmt.Errorf("sandbox %s: %s: %w", id, s.name, err)
		}
		if m.failAt != nil {
			if err := m.failAt(s.name); err != nil {
				return Paths{}, fmt.Errorf("sandbox %s: after %s: %w", id, s.name, err)
			}
		}
	}
	m.log.Debug("sandbox created", "sandbox", id, "dir", p.Dir, "netns", p.NetNS)
	return p, nil
}

func (m *Manager) makeDir(p *Paths, u *undoStack, _ *corev1.Pod) error {
	if err := os.MkdirAll(m.sandboxDir, 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(p.Dir, 0o700); err != nil {
		return err // an existing dir belongs to someone else: never reuse it
	}
	dir := p.Dir // not p: Create zeroes its result before the rollback runs
	u.push(func() error { return removeDir(dir) })
	return nil
}

func (m *Manager) makeNetNS(p *Paths, u *undoStack, pod *corev1.Pod) error {
	if pod.Spec.HostNetwork || p.NetNS != "" {
		return nil
	}
	dir := netnsDirOf(p.Dir)
	u.push(func() error { return removeDir(dir) })
	ns, err := netns.NewNetNS(dir)
	if err != nil {
		return err
	}
	u.push(ns.Remove)
	p.NetNS = ns.GetPath()
	return nil
}

// event records a pod event, and logs it.
func (m *Manager) event(pod *corev1.Pod, typ, reason, message string) {
	m.log.Warn("sandbox: "+reason, "pod", pod.Namespace+"/"+pod.Name, "msg", message)
	if m.recorder != nil {
		m.recorder(pod.UID, typ, reason, message)
	}
}

// Dir returns the directory of sandbox id (see the package doc).
func (m *Manager) Dir(id string) string { return filepath.Join(m.sandboxDir, id) }

// netnsDirOf maps a sandbox dir <runDir>/sandboxes/<id> to the dir its net
// namespace is pinned in, <runDir>/netns/<id>.
func netnsDirOf(dir string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(dir)), "netns", filepath.Base(dir))
}

// Remove unmounts and deletes everything of the sandbox. Missing parts are
// fine, so it is idempotent and works on what a reboot left (records whose
// files are gone).
func (m *Manager) Remove(_ context.Context, p Paths) error {
	var errs []error
	if p.Dir != "" && filepath.Base(filepath.Dir(p.Dir)) == "sandboxes" {
		if err := stopPause(p.Dir); err != nil { // first, and nothing removed while it runs: a retry finds it
			return fmt.Errorf("sandbox: remove: %w", err)
		}
	}
	if p.NetNS != "" {
		if !strings.HasPrefix(filepath.Base(p.NetNS), "cni-") {
			return fmt.Errorf("sandbox: refusing to remove netns %q: not made by pkg/netns", p.NetNS)
		}
		if err := netns.LoadNetNS(p.NetNS).Remove(); err != nil {
			errs = append(errs, fmt.Errorf("remove netns: %w", err))
		}
	}
	if p.Dir != "" {
		if filepath.Base(filepath.Dir(p.Dir)) != "sandboxes" {
			return fmt.Errorf("sandbox: refusing to remove %q: not a sandbox dir", p.Dir)
		}
		for _, d := range []string{netnsDirOf(p.Dir), p.Dir} {
			if err := removeDir(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sandbox: remove: %w", err)
	}
	return nil
}

// Exists tells whether path is a pinned namespace (an nsfs mount). After a
// reboot the file is gone (/run is a tmpfs); a file that is no longer a
// mount also reports false.
func Exists(path string) bool { return isNSFS(path) }

// Exists is the method form of the package-level Exists.
func (m *Manager) Exists(path string) bool { return isNSFS(path) }

// undoStack runs registered rollbacks in reverse order.
type undoStack []func() error

func (u *undoStack) push(f func() error) { *u = append(*u, f) }

func (u *undoStack) run() error {
	var errs []error
	for i := len(*u) - 1; i >= 0; i-- {
		if err := (*u)[i](); err != nil {
			errs = append(errs, err)
		}
	}
	*u = nil
	return errors.Join(errs...)
}
