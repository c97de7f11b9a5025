// Package cgroups puts every pod in its own cgroup (see docs/ARCHITECTURE.md).
//
// Layout (kubelet-like, Parent defaults to "podhost"):
//
//	cgroupfs: /podhost/pod<uid>               Guaranteed
//	          /podhost/burstable/pod<uid>     Burstable
//	          /podhost/besteffort/pod<uid>    BestEffort
//	systemd:  podhost.slice ⊃ podhost-pod<uid_>.slice
//	          podhost.slice ⊃ podhost-burstable.slice ⊃ podhost-burstable-pod<uid_>.slice
//	          (dashes in the uid become "_": systemd nests slices by dashes)
//
// Containers go one level below the pod: cgroupfs "<pod path>/<containerID>";
// systemd runc's "slice:prefix:name" form "<pod slice>:podhost:<containerID>"
// (runc then creates the scope podhost-<containerID>.scope).
//
// Drivers: systemd (transient slices over D-Bus) on a unified host whose PID 1
// is systemd; cgroupfs everywhere else. cgroupfs works on v2 (unified) and on
// v1/hybrid hosts, where the pod dir is made in every v1 hierarchy.
package cgroups

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Driver names.
const (
	DriverAuto     = "auto"
	DriverSystemd  = "systemd"
	DriverCgroupfs = "cgroupfs"
)

// Cgroup modes, as reported by Mode.
const (
	ModeUnified     = "unified"
	ModeHybrid      = "hybrid"
	ModeLegacy      = "legacy"
	ModeUnavailable = "unavailable"
)

// DefaultRoot is the cgroup mount root.
const DefaultRoot = "/sys/fs/cgroup"

// DefaultParent is the top-level cgroup (cgroupfs dir / systemd slice prefix).
const DefaultParent = "podhost"

// systemdPrefix is the runc scope prefix in systemd cgroupsPath values.
const systemdPrefix = "podhost"

// Options configures New.
type Options struct {
	Driver string // auto (default) | systemd | cgroupfs
	Root   string // cgroup mount root; default /sys/fs/cgroup (fake dirs in tests)
	// Parent is the top-level cgroup name; default "podhost". Tests use a
	// unique one (e.g. "podhost-test-<pid>").
	Parent string
	Logger *slog.Logger

	// Test hooks (nil = real implementation).
	detectMode  func(root string) string
	systemdUp   func() bool
	newConn     func(ctx context.Context) (systemdConn, error)
	isHierarchy func(path string) bool
}

// PodCgroup identifies one pod's cgroup.
type PodCgroup struct {
	Driver string
	// Name is the systemd slice (podhost-burstable-pod<uid_>.slice) or the
	// cgroupfs path relative to the root (/podhost/burstable/pod<uid>).
	Name string
	UID  types.UID
	QOS  corev1.PodQOSClass
}

// Resources are pod-level limits. Zero means "not limited" for CPUQuota,
// MemoryLimit and PidsLimit; CPUShares 0 means "leave the default".
type Resources struct {
	CPUQuota    int64  // µs per CPUPeriod
	CPUPeriod   uint64 // µs; default 100000 when CPUQuota is set
	CPUShares   uint64 // v1 shares; v2/systemd weight is derived
	MemoryLimit int64  // bytes
	PidsLimit   int64
}

// driver is what a cgroup driver implements.
type driver interface {
	ensure(ctx context.Context, pc PodCgroup, r Resources) error
	remove(ctx context.Context, pc PodCgroup) error
	list(ctx context.Context) ([]PodCgroup, error)
	exists(pc PodCgroup) bool // the pod's cgroup is there (cheap: stat)
	// setLevelShares makes the QoS level's cgroup (and its parent) if
	// missing and sets its cpu shares (qoslevel.go).
	setLevelShares(ctx context.Context, qos corev1.PodQOSClass, shares uint64) error
	levelExists(qos corev1.PodQOSClass) bool // as exists, for a QoS level
	// setTop makes the top cgroup if missing and writes r there (top.go).
	setTop(ctx context.Context, r Resources) error
	topExists() bool // as exists, for the top cgroup
}

// Manager creates and removes pod cgroups.
type Manager struct {
	mode   string
	driver string
	parent string
	log    *slog.Logger
	drv    driver
	stats  *Reader
	done   ensured
	// topLogged is the node allocatable last logged at Info (top.go).
	topLogged atomic.Pointer[Resources]
}

// New detects the cgroup mode, picks the driver and returns a Manager.
func New(ctx context.Context, o Options) (*Manager, error) {
	o = withDefaults(o)
	m := &Manager{mode: o.detectMode(o.Root), parent: o.Parent, log: o.Logger}
	if m.mode == ModeUnavailable {
		return nil, fmt.Errorf("cgroups: no cgroup filesystem at %s", o.Root)
	}
	name, err := m.pickDriver(ctx, o)
	if err != nil {
		return nil, err
	}
	m.driver = name
	m.stats = NewReader(o.Root, m.mode == ModeUnified, name, o.Parent)
	switch name {
	case DriverSystemd:
		conn, err := o.newConn(ctx)
		if err != nil {
			return nil, fmt.Errorf("cgroups: systemd driver: connect D-Bus: %w", err)
		}
		m.drv = &systemdDriver{conn: conn, parent: o.Parent, root: o.Root, v2: m.mode == ModeUnified, log: o.Logger}
	case DriverCgroupfs:
		if m.drv, err = newFSDriver(o, m.mode); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("cgroups: unknown driver %q (want auto, systemd or cgroupfs)", o.Driver)
	}
	m.log.Info("cgroups ready", "mode", m.mode, "driver", m.driver, "parent", m.parent)
	return m, nil
}

func withDefaults(o Options) Options {
	if o.Driver == "" {
		o.Driver = DriverAuto
	}
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	if o.Parent == "" {
		o.Parent = DefaultParent
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.detectMode == nil {
		o.detectMode = detectMode
	}
	if o.systemdUp == nil {
		o.systemdUp = systemdRunning
	}
	if o.newConn == nil {
		o.newConn = dialSystemd
	}
	if o.isHierarchy == nil {
		o.isHierarchy = isCgroupMount
	}
	return o
}

// pickDriver resolves "auto" and checks that an explicit choice can work.
func (m *Manager) pickDriver(ctx context.Context, o Options) (string, error) {
	switch o.Driver {
	case DriverCgroupfs:
		m.warnIfNotUnified()
		return DriverCgroupfs, nil
	case DriverSystemd:
		if !o.systemdUp() {
			return "", fmt.Errorf("cgroups: systemd driver requested but systemd is not PID 1 (no /run/systemd/system)")
		}
		return DriverSystemd, nil
	case DriverAuto:
	default:
		return "", fmt.Errorf("cgroups: unknown driver %q (want auto, systemd or cgroupfs)", o.Driver)
	}
	if m.mode == ModeUnified && o.systemdUp() {
		conn, err := o.newConn(ctx)
		if err == nil {
			closeConn(conn)
			return DriverSystemd, nil
		}
		m.log.Warn("systemd is PID 1 but D-Bus is unreachable; using the cgroupfs driver", "err", err)
	}
	m.warnIfNotUnified()
	return DriverCgroupfs, nil
}

func (m *Manager) warnIfNotUnified() {
	if m.mode != ModeUnified {
		m.log.Warn("cgroup v2 (unified) is podhost's primary target; running on a "+m.mode+
			" host with the cgroupfs driver", "mode", m.mode)
	}
}

// Mode reports the host's cgroup mode: unified, hybrid or legacy.
func (m *Manager) Mode() string { return m.mode }

// Driver reports the driver in use: systemd or cgroupfs.
func (m *Manager) Driver() string { return m.driver }

// EnsurePod creates (or updates) the pod's cgroup with r applied. When this
// Manager already applied r to it and it still exists, that is all it
// checks (ensured.go).
// It is idempotent.
func (m *Manager) EnsurePod(ctx context.Context, uid types.UID, qos corev1.PodQOSClass, r Resources) (PodCgroup, error) {
	if uid == "" {
		return PodCgroup{}, fmt.Errorf("cgroups: empty pod uid")
	}
	pc := m.podCgroup(uid, qos)
	if m.done.same(pc.Name, r) && m.drv.exists(pc) {
		return pc, nil
	}
	if err := m.drv.ensure(ctx, pc, r); err != nil {
		m.done.forget(pc.Name)
		return PodCgroup{}, fmt.Errorf("cgroups: ensure %s: %w", pc.Name, err)
	}
	m.done.set(pc.Name, r)
	return pc, nil
}

// ContainerPath is the value for the OCI linux.cgroupsPath of a container in
// the pod: "<pod path>/<id>" for cgroupfs, "<pod slice>:podhost:<id>" for
// systemd.
func (m *Manager) ContainerPath(pc PodCgroup, containerID string) string {
	if pc.Driver == DriverSystemd {
		return pc.Name + ":" + systemdPrefix + ":" + containerID
	}
	return filepath.Join(pc.Name, containerID)
}

// RemovePod deletes the pod's cgroup (and any container cgroups left below
// it). Missing is success; a cgroup that still holds processes is an error
// wrapping EBUSY (cgroupfs) or the systemd job failure.
func (m *Manager) RemovePod(ctx context.Context, pc PodCgroup) error {
	m.done.forget(pc.Name)
	if err := m.drv.remove(ctx, pc); err != nil {
		return fmt.Errorf("cgroups: remove %s: %w", pc.Name, err)
	}
	return nil
}

// ListPods enumerates the pod cgroups that exist (for leak cleanup).
func (m *Manager) ListPods(ctx context.Context) ([]PodCgroup, error) {
	pcs, err := m.drv.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("cgroups: list pods: %w", err)
	}
	return pcs, nil
}

func (m *Manager) podCgroup(uid types.UID, qos corev1.PodQOSClass) PodCgroup {
	pc := PodCgroup{Driver: m.driver, UID: uid, QOS: qos}
	if m.driver == DriverSystemd {
		pc.Name = sliceName(m.parent, qos, uid)
	} else {
		pc.Name = fsPath(m.parent, qos, uid)
	}
	return pc
}

func systemdRunning() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}
