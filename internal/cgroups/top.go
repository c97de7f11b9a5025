package cgroups

import (
	"context"
	"fmt"
)

// SetNodeAllocatable enforces node allocatable on the top cgroup
// (cgroupfs /<parent>, systemd <parent>.slice), as the kubelet's
// enforceNodeAllocatableCgroups does on kubepods with its default
// enforceNodeAllocatable [pods] (pkg/kubelet/cm/node_container_manager_linux.go):
// cpu shares MilliCPUToShares(cpuMilli) (cpu.weight on v2, CPUShares or
// CPUWeight on the slice) and a memory limit of memoryBytes; no cpu quota
// and no pids limit. The caller passes capacity less systemReserved (and,
// for memory, the huge page pools): the eviction thresholds are not part of
// it, as in the kubelet's getNodeAllocatableAbsolute. memoryBytes 0 leaves
// the memory unlimited.
//
// Like EnsurePod it is cheap when nothing changed (ensured.go), so it can
// run on every housekeeping pass: a limit the kernel refused (v1: usage
// above it, EBUSY) is tried again, as the kubelet retries every minute.
func (m *Manager) SetNodeAllocatable(ctx context.Context, cpuMilli, memoryBytes int64) error {
	r := Resources{CPUShares: MilliCPUToShares(cpuMilli), MemoryLimit: memoryBytes}
	name := m.topName()
	if m.done.same(name, r) && m.drv.topExists() {
		return nil
	}
	if err := m.drv.setTop(ctx, r); err != nil {
		m.done.forget(name)
		return fmt.Errorf("cgroups: enforce node allocatable on %s: %w", name, err)
	}
	m.done.set(name, r)
	m.log.Info("cgroups: node allocatable enforced", "cgroup", name, "cpuShares", r.CPUShares, "memoryLimitBytes", r.MemoryLimit)
	return nil
}

// topName is the top cgroup's cgroupfs path or systemd slice (the key of
// what was applied: never a pod's or a QoS level's name).
func (m *Manager) topName() string {
	if m.driver == DriverSystemd {
		return parentSlice(m.parent)
	}
	return fsTopPath(m.parent)
}

func fsTopPath(parent string) string { return "/" + parent }

// setTop (cgroupfs) makes the top cgroup in every hierarchy (v1) or with
// the controllers enabled above it (v2) and writes r there, as a pod's
// ensure does, without the rollback: pods may live below it.
func (d *fsDriver) setTop(_ context.Context, r Resources) error {
	p := fsTopPath(d.parent)
	if d.v2 {
		dir, avail, err := d.mkdirsV2(p)
		if err != nil {
			return err
		}
		return d.writeV2(dir, avail, r)
	}
	if err := d.mkdirsV1(p); err != nil {
		return err
	}
	return d.writeV1(p, r)
}

func (d *fsDriver) topExists() bool {
	return d.exists(PodCgroup{Name: fsTopPath(d.parent)})
}

// setTop (systemd) starts the top slice with r's properties, or sets them
// on the running slice.
func (d *systemdDriver) setTop(ctx context.Context, r Resources) error {
	return d.startSlice(ctx, parentSlice(d.parent), "-.slice", d.resourceProps(r), true)
}

func (d *systemdDriver) topExists() bool {
	return d.exists(PodCgroup{Name: parentSlice(d.parent)})
}
