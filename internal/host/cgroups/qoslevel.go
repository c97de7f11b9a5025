package cgroups

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	corev1 "k8s.io/api/core/v1"
)

// SetBurstableCPUShares sets the cpu weight of the Burstable QoS level
// (cgroupfs /<parent>/burstable, systemd <parent>-burstable.slice), as the
// kubelet's QoS container manager does (setCPUCgroupConfig): shares is
// MilliCPUToShares of the summed cpu requests of the active Burstable pods,
// clamped to [MinShares, MaxShares]. Written as cpu.shares on v1, as
// cpu.weight (SharesToWeight) on v2, as CPUShares/CPUWeight on the slice
// with systemd. The level (and the parent above it) is made if missing, as
// the kubelet's QoS cgroups always exist.
//
// Like EnsurePod it is cheap when nothing changed (ensured.go): the value
// this Manager last applied, with the level still there, is not written
// again.
func (m *Manager) SetBurstableCPUShares(ctx context.Context, shares uint64) error {
	return m.setLevelShares(ctx, corev1.PodQOSBurstable, shares)
}

func (m *Manager) setLevelShares(ctx context.Context, qos corev1.PodQOSClass, shares uint64) error {
	if qosDir(qos) == "" {
		return fmt.Errorf("cgroups: no QoS level cgroup for %q pods", qos)
	}
	shares = min(max(shares, MinShares), MaxShares)
	name, r := m.levelName(qos), Resources{CPUShares: shares}
	if m.done.same(name, r) && m.drv.levelExists(qos) {
		return nil
	}
	if err := m.drv.setLevelShares(ctx, qos, shares); err != nil {
		m.done.forget(name)
		return fmt.Errorf("cgroups: set cpu shares %d of QoS level %s: %w", shares, name, err)
	}
	m.done.set(name, r)
	m.log.Debug("cgroups: QoS level cpu shares set", "cgroup", name, "shares", shares)
	return nil
}

// levelName is the QoS level's cgroupfs path or systemd slice (the key of
// what was applied: it never equals a pod's PodCgroup.Name).
func (m *Manager) levelName(qos corev1.PodQOSClass) string {
	if m.driver == DriverSystemd {
		return qosSlice(m.parent, qos)
	}
	return fsLevelPath(m.parent, qos)
}

// fsLevelPath is the cgroupfs path of a QoS level: /<parent>/<qos>.
func fsLevelPath(parent string, qos corev1.PodQOSClass) string {
	return "/" + parent + "/" + qosDir(qos)
}

// setLevelShares (cgroupfs) makes the level as a pod's ensure makes it (every
// v1 hierarchy; on v2 the controllers enabled on the way), then writes
// cpu.shares (v1, cpu hierarchy) or cpu.weight (v2; skipped when the cpu
// controller is not available there, as for BestEffort's).
func (d *fsDriver) setLevelShares(_ context.Context, qos corev1.PodQOSClass, shares uint64) error {
	p := fsLevelPath(d.parent, qos)
	if d.v2 {
		dir, avail, err := d.mkdirsV2(p)
		if err != nil || !slices.Contains(avail, "cpu") {
			return err
		}
		return writeFile(dir, "cpu.weight", strconv.FormatUint(SharesToWeight(shares), 10))
	}
	if err := d.mkdirsV1(p); err != nil {
		return err
	}
	return writeFile(filepath.Join(d.controllers["cpu"], p), "cpu.shares", strconv.FormatUint(shares, 10))
}

// levelExists (cgroupfs): the level's dir in every hierarchy.
func (d *fsDriver) levelExists(qos corev1.PodQOSClass) bool {
	return d.exists(PodCgroup{Name: fsLevelPath(d.parent, qos)})
}

// setLevelShares (systemd) starts the parent and QoS slices if needed and
// sets the QoS slice's CPUShares (v1) or CPUWeight (v2), with
// SetUnitProperties when it exists, as the BestEffort slice's is set.
func (d *systemdDriver) setLevelShares(ctx context.Context, qos corev1.PodQOSClass, shares uint64) error {
	top := parentSlice(d.parent)
	if err := d.startSlice(ctx, top, "-.slice", nil, false); err != nil {
		return err
	}
	return d.startSlice(ctx, qosSlice(d.parent, qos), top, []sddbus.Property{d.cpuSharesProp(shares)}, true)
}

// levelExists (systemd): as exists, for the QoS slice.
func (d *systemdDriver) levelExists(qos corev1.PodQOSClass) bool {
	return d.exists(PodCgroup{Name: qosSlice(d.parent, qos)})
}
