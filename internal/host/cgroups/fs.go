package cgroups

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fsDriver is the cgroupfs driver. On v2 it works in the single hierarchy at
// root; on v1/hybrid in every hierarchy mounted below root (runc joins all of
// them, including name=systemd and, on hybrid hosts, the unified one), with
// limits written in the cpu, memory and pids hierarchies.
type fsDriver struct {
	root   string
	parent string
	v2     bool
	log    *slog.Logger
	// v1 only: every hierarchy dir (deduplicated) and controller → its dir.
	hierarchies []string
	controllers map[string]string
}

func newFSDriver(o Options, mode string) (*fsDriver, error) {
	d := &fsDriver{root: o.Root, parent: o.Parent, v2: mode == ModeUnified, log: o.Logger}
	if d.v2 {
		d.hierarchies = []string{o.Root}
		return d, nil
	}
	if err := d.discoverV1(o.isHierarchy); err != nil {
		return nil, err
	}
	for _, c := range []string{"cpu", "memory", "pids"} {
		if d.controllers[c] == "" {
			return nil, fmt.Errorf("cgroups: v1 controller %q is not mounted under %s", c, o.Root)
		}
	}
	return d, nil
}

// discoverV1 lists the hierarchies under root. Entry names are the mount
// names ("cpu,cpuacct", "memory", "systemd", "unified"); symlinks such as
// cpu → cpu,cpuacct are followed and deduplicated.
func (d *fsDriver) discoverV1(isHierarchy func(string) bool) error {
	entries, err := os.ReadDir(d.root)
	if err != nil {
		return fmt.Errorf("cgroups: read %s: %w", d.root, err)
	}
	d.controllers = map[string]string{}
	seen := map[string]bool{}
	for _, e := range entries {
		p := filepath.Join(d.root, e.Name())
		real, err := filepath.EvalSymlinks(p)
		if err != nil || !isDir(real) || !isHierarchy(real) {
			continue
		}
		for _, c := range strings.Split(e.Name(), ",") {
			if _, ok := d.controllers[c]; !ok {
				d.controllers[c] = real
			}
		}
		if !seen[real] {
			seen[real] = true
			d.hierarchies = append(d.hierarchies, real)
		}
	}
	sort.Strings(d.hierarchies)
	return nil
}

func (d *fsDriver) ensure(ctx context.Context, pc PodCgroup, r Resources) (err error) {
	existed := isDir(filepath.Join(d.hierarchies[0], pc.Name))
	defer func() {
		if err != nil && !existed {
			if rerr := d.remove(ctx, pc); rerr != nil {
				d.log.Warn("cgroups: rollback of partial pod cgroup failed", "cgroup", pc.Name, "err", rerr)
			}
		}
	}()
	if d.v2 {
		return d.ensureV2(pc, r)
	}
	return d.ensureV1(pc, r)
}

// pathLevels are the cgroup paths from the top down to p:
// /a/b/c → [/a /a/b /a/b/c].
func pathLevels(p string) []string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	out := make([]string, 0, len(parts))
	for i := range parts {
		out = append(out, "/"+strings.Join(parts[:i+1], "/"))
	}
	return out
}

func (d *fsDriver) remove(_ context.Context, pc PodCgroup) error {
	if !d.validPodPath(pc.Name) {
		return fmt.Errorf("not a pod cgroup path: %q", pc.Name)
	}
	var errs []error
	for _, h := range d.hierarchies {
		if err := rmTree(filepath.Join(h, pc.Name)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validPodPath guards rmTree against removing anything but a pod dir.
func (d *fsDriver) validPodPath(p string) bool {
	base := filepath.Base(p)
	return filepath.Clean(p) == p && slices.Contains(fsQOSPaths(d.parent), filepath.Dir(p)) &&
		strings.HasPrefix(base, podPrefix) && len(base) > len(podPrefix)
}

// rmTree removes a cgroup dir and its child cgroups, children first.
// Missing is success. On cgroupfs rmdir removes a dir with its control
// files; a dir with processes fails with EBUSY, which is returned wrapped.
// On a plain filesystem (fake roots in tests) ENOTEMPTY makes it delete the
// regular files and retry: on a real cgroupfs that case cannot happen.
func rmTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := rmTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	err = os.Remove(dir)
	if errors.Is(err, unix.ENOTEMPTY) {
		for _, e := range entries {
			if e.Type().IsRegular() {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		err = os.Remove(dir)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rmdir %s: %w", dir, err)
	}
	return nil
}

func (d *fsDriver) list(_ context.Context) ([]PodCgroup, error) {
	seen := map[string]bool{}
	var out []PodCgroup
	for _, h := range d.hierarchies {
		for _, qp := range fsQOSPaths(d.parent) {
			entries, err := os.ReadDir(filepath.Join(h, qp))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", filepath.Join(h, qp), err)
			}
			for _, e := range entries {
				uid, ok := strings.CutPrefix(e.Name(), podPrefix)
				name := qp + "/" + e.Name()
				if !ok || uid == "" || !e.IsDir() || seen[name] {
					continue
				}
				seen[name] = true
				out = append(out, PodCgroup{Driver: DriverCgroupfs, Name: name, UID: types.UID(uid), QOS: qosFromDir(filepath.Base(qp))})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// qosLevelShares is the fixed cpu shares kubelet gives a QoS level cgroup:
// BestEffort pods together get the minimum; 0 (leave it) for the others.
// The Burstable level's depends on the pods (SetBurstableCPUShares).
func qosLevelShares(p string, parent string) uint64 {
	if p == "/"+parent+"/"+qosDir(corev1.PodQOSBestEffort) {
		return MinShares
	}
	return 0
}

func writeFile(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %s=%q: %w", filepath.Join(dir, name), value, err)
	}
	return nil
}

func mkdir(p string) error {
	if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mkdir %s: %w", p, err)
	}
	return nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
