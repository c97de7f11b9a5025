package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ensureV1 makes every level down to the pod in every hierarchy, then writes
// the QoS-level and pod limits (cpu, memory, pids hierarchies).
func (d *fsDriver) ensureV1(pc PodCgroup, r Resources) error {
	if err := d.mkdirsV1(pc.Name); err != nil {
		return err
	}
	return d.writeV1(pc.Name, r)
}

// mkdirsV1 makes every level down to p in every hierarchy and writes the
// fixed cpu shares of the QoS levels above p (BestEffort's).
func (d *fsDriver) mkdirsV1(p string) error {
	ls := pathLevels(p)
	for _, h := range d.hierarchies {
		for _, l := range ls {
			if err := d.mkdirV1(h, l); err != nil {
				return err
			}
		}
	}
	for _, l := range ls[:len(ls)-1] {
		if s := qosLevelShares(l, d.parent); s > 0 {
			if err := writeFile(filepath.Join(d.controllers["cpu"], l), "cpu.shares", strconv.FormatUint(s, 10)); err != nil {
				return err
			}
		}
	}
	return nil
}

// mkdirV1 creates one level; in the cpuset hierarchy a new cgroup starts
// with empty cpus/mems (no task could join), so they are copied from the
// parent like runc does.
func (d *fsDriver) mkdirV1(h, l string) error {
	p := filepath.Join(h, l)
	if err := mkdir(p); err != nil {
		return err
	}
	if h != d.controllers["cpuset"] {
		return nil
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if err := copyIfEmpty(filepath.Dir(p), p, f); err != nil {
			return err
		}
	}
	return nil
}

func copyIfEmpty(parent, child, name string) error {
	cur, err := os.ReadFile(filepath.Join(child, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // not a real cpuset dir (fake roots)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(child, name), err)
	}
	if strings.TrimSpace(string(cur)) != "" {
		return nil
	}
	val, err := os.ReadFile(filepath.Join(parent, name))
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Join(parent, name), err)
	}
	return writeFile(child, name, strings.TrimSpace(string(val)))
}

// v1Values are the files written for r, per controller, in order (the CFS
// period must be set before the quota).
func v1Values(r Resources) map[string][][2]string {
	cpu := [][2]string{}
	if r.CPUShares > 0 {
		cpu = append(cpu, [2]string{"cpu.shares", strconv.FormatUint(r.CPUShares, 10)})
	}
	if r.CPUQuota > 0 {
		cpu = append(cpu,
			[2]string{"cpu.cfs_period_us", strconv.FormatUint(period(r), 10)},
			[2]string{"cpu.cfs_quota_us", strconv.FormatInt(r.CPUQuota, 10)})
	} else {
		cpu = append(cpu, [2]string{"cpu.cfs_quota_us", "-1"})
	}
	mem := "-1"
	if r.MemoryLimit > 0 {
		mem = strconv.FormatInt(r.MemoryLimit, 10)
	}
	return map[string][][2]string{
		"cpu":    cpu,
		"memory": {{"memory.limit_in_bytes", mem}},
		"pids":   {{"pids.max", pidsMax(r)}},
	}
}

func (d *fsDriver) writeV1(podPath string, r Resources) error {
	for ctrl, vals := range v1Values(r) {
		dir := filepath.Join(d.controllers[ctrl], podPath)
		for _, kv := range vals {
			if err := writeFile(dir, kv[0], kv[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

func period(r Resources) uint64 {
	if r.CPUPeriod == 0 {
		return DefaultPeriod
	}
	return r.CPUPeriod
}

func pidsMax(r Resources) string {
	if r.PidsLimit > 0 {
		return strconv.FormatInt(r.PidsLimit, 10)
	}
	return "max"
}
