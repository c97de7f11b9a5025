package cgroups

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
)

// SetNodeAllocatable enforces node allocatable on the top cgroup
// (cgroupfs /<parent>, systemd <parent>.slice), as the kubelet's
// enforceNodeAllocatableCgroups does on kubepods with its default
// enforceNodeAllocatable [pods] (pkg/kubelet/cm/node_container_manager_linux.go):
// cpu shares MilliCPUToShares(cpuMilli) (cpu.weight on v2, CPUShares or
// CPUWeight on the slice) and a memory limit of memoryBytes. Nothing else
// is written: a cpu quota or tasks limit an operator put on the top cgroup
// (a drop-in for the slice) stays, as the kubelet leaves kubepods' quota.
// The caller passes capacity less systemReserved (and, for memory, the
// huge page pools): the eviction thresholds are not part of it, as in the
// kubelet's getNodeAllocatableAbsolute. memoryBytes 0 leaves the memory
// unlimited.
//
// Like EnsurePod it is cheap when nothing changed (ensured.go), so it can
// run on every full housekeeping pass: a limit the kernel refused (v1:
// usage above it, EBUSY) is tried again, as the kubelet retries every
// minute. The cpu weight is written first and whatever the memory write
// does. On v2 a memory.max below the usage is not refused: the kernel
// reclaims, then OOM-kills in the pods' tree.
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
	level := slog.LevelDebug // systemd on v1 cannot tell the slice exists: every pass sets it
	if prev := m.topLogged.Swap(&r); prev == nil || *prev != r {
		level = slog.LevelInfo
	}
	m.log.Log(ctx, level, "cgroups: node allocatable enforced", "cgroup", name, "cpuShares", r.CPUShares, "memoryLimitBytes", r.MemoryLimit)
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
// the controllers enabled above it (v2), as a pod's ensure does, without
// the rollback (pods may live below it), then writes the cpu weight and,
// whatever that did, the memory limit.
func (d *fsDriver) setTop(_ context.Context, r Resources) error {
	p := fsTopPath(d.parent)
	mem := strconv.FormatInt(r.MemoryLimit, 10)
	if d.v2 {
		dir, avail, err := d.mkdirsV2(p)
		if err != nil {
			return err
		}
		var cpuErr error
		if slices.Contains(avail, "cpu") {
			cpuErr = writeFile(dir, "cpu.weight", strconv.FormatUint(SharesToWeight(r.CPUShares), 10))
		}
		if !slices.Contains(avail, "memory") {
			return errors.Join(cpuErr, fmt.Errorf("controller \"memory\" is not available for %s (cannot set memory.max)", dir))
		}
		if r.MemoryLimit <= 0 {
			mem = "max"
		}
		return errors.Join(cpuErr, writeFile(dir, "memory.max", mem))
	}
	if err := d.mkdirsV1(p); err != nil {
		return err
	}
	if r.MemoryLimit <= 0 {
		mem = "-1"
	}
	return errors.Join(
		writeFile(filepath.Join(d.controllers["cpu"], p), "cpu.shares", strconv.FormatUint(r.CPUShares, 10)),
		writeFile(filepath.Join(d.controllers["memory"], p), "memory.limit_in_bytes", mem))
}

func (d *fsDriver) topExists() bool {
	return d.exists(PodCgroup{Name: fsTopPath(d.parent)})
}

// setTop (systemd) starts the top slice with the cpu weight and memory
// limit properties, or sets them on the running slice.
func (d *systemdDriver) setTop(ctx context.Context, r Resources) error {
	mem := uint64(math.MaxUint64)
	if r.MemoryLimit > 0 {
		mem = uint64(r.MemoryLimit)
	}
	memProp := "MemoryLimit"
	if d.v2 {
		memProp = "MemoryMax"
	}
	props := []sddbus.Property{d.cpuSharesProp(r.CPUShares), newProp(memProp, mem)}
	return d.startSlice(ctx, parentSlice(d.parent), "-.slice", props, true)
}

func (d *systemdDriver) topExists() bool {
	return d.exists(PodCgroup{Name: parentSlice(d.parent)})
}
