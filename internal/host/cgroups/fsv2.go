package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ensureV2 walks from the root down to the pod: at each level it enables
// the available controllers in the parent's cgroup.subtree_control (a
// controller is available in a child iff its parent enabled it), makes the
// child, then writes the pod's limits.
//
// cgroup2.NewManager is not used: it needs cgroup.subtree_control to exist
// in every intermediate dir, which only the kernel provides, so it cannot be
// exercised against a fake root; the few files written here are the same.
func (d *fsDriver) ensureV2(pc PodCgroup, r Resources) error {
	dir, avail, err := d.mkdirsV2(pc.Name)
	if err != nil {
		return err
	}
	return d.writeV2(dir, avail, r)
}

// mkdirsV2 makes every level down to p, enabling the controllers on the
// way and writing BestEffort's fixed cpu weight; it returns p's dir and
// the controllers available in it.
func (d *fsDriver) mkdirsV2(p string) (string, []string, error) {
	avail, err := readControllers(d.root)
	if err != nil {
		return "", nil, err
	}
	cur := d.root
	for _, l := range pathLevels(p) {
		avail = d.enableControllers(cur, avail)
		cur = filepath.Join(d.root, l)
		if err := mkdir(cur); err != nil {
			return "", nil, err
		}
		if s := qosLevelShares(l, d.parent); s > 0 && slices.Contains(avail, "cpu") {
			if err := writeFile(cur, "cpu.weight", strconv.FormatUint(SharesToWeight(s), 10)); err != nil {
				return "", nil, err
			}
		}
	}
	return cur, avail, nil
}

func readControllers(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("read controllers: %w", err)
	}
	return strings.Fields(string(b)), nil
}

// enableControllers writes "+c" for every available controller into dir's
// cgroup.subtree_control and returns those that are now enabled (one write
// for all; if the kernel refuses it, one write per controller).
func (d *fsDriver) enableControllers(dir string, avail []string) []string {
	if len(avail) == 0 {
		return nil
	}
	if err := writeFile(dir, "cgroup.subtree_control", plusList(avail)); err == nil {
		return avail
	}
	var ok []string
	for _, c := range avail {
		if err := writeFile(dir, "cgroup.subtree_control", "+"+c); err != nil {
			d.log.Warn("cgroups: cannot enable controller", "dir", dir, "controller", c, "err", err)
			continue
		}
		ok = append(ok, c)
	}
	return ok
}

func plusList(cs []string) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = "+" + c
	}
	return strings.Join(out, " ")
}

// v2Value is one file to write: limited is true when the value is an actual
// limit (its controller must then be available).
type v2Value struct {
	ctrl, file, value string
	limited           bool
}

func v2Values(r Resources) []v2Value {
	var out []v2Value
	if r.CPUShares > 0 {
		out = append(out, v2Value{"cpu", "cpu.weight", strconv.FormatUint(SharesToWeight(r.CPUShares), 10), false})
	}
	cpuMax := "max"
	if r.CPUQuota > 0 {
		cpuMax = fmt.Sprintf("%d %d", r.CPUQuota, period(r))
	}
	mem := "max"
	if r.MemoryLimit > 0 {
		mem = strconv.FormatInt(r.MemoryLimit, 10)
	}
	return append(out,
		v2Value{"cpu", "cpu.max", cpuMax, r.CPUQuota > 0},
		v2Value{"memory", "memory.max", mem, r.MemoryLimit > 0},
		v2Value{"pids", "pids.max", pidsMax(r), r.PidsLimit > 0})
}

func (d *fsDriver) writeV2(dir string, avail []string, r Resources) error {
	for _, v := range v2Values(r) {
		if !slices.Contains(avail, v.ctrl) {
			if v.limited {
				return fmt.Errorf("controller %q is not available for %s (cannot set %s)", v.ctrl, dir, v.file)
			}
			continue
		}
		if err := writeFile(dir, v.file, v.value); err != nil {
			return err
		}
	}
	return nil
}
