package eviction

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
)

// FsStats is one filesystem's capacity and what is free.
type FsStats struct {
	Capacity, Available int64 // bytes (Available: for unprivileged users, as df)
	Inodes, InodesFree  int64
	Dev                 uint64 // the device, to tell a dedicated image filesystem
}

// Statfs measures the filesystem holding path.
func Statfs(path string) (FsStats, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(path, &s); err != nil {
		return FsStats{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FsStats{}, fmt.Errorf("stat %s: %w", path, err)
	}
	bs := s.Bsize
	return FsStats{Capacity: int64(s.Blocks) * bs, Available: int64(s.Bavail) * bs,
		Inodes: int64(s.Files), InodesFree: int64(s.Ffree), Dev: st.Dev}, nil
}

// memoryAvailable is the kubelet's memory.available from /proc/meminfo:
// MemTotal less the working set, the working set being what is used less
// the inactive file pages (MemFree + Inactive(file) available).
func memoryAvailable(path string) (Observation, error) {
	f, err := os.Open(path)
	if err != nil {
		return Observation{}, fmt.Errorf("memory.available: %w", err)
	}
	defer f.Close()
	vals := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch k {
		case "MemTotal", "MemFree", "Inactive(file)":
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return Observation{}, fmt.Errorf("memory.available: %s: %s: %w", path, k, err)
			}
			vals[k] = n << 10
		}
	}
	if err := sc.Err(); err != nil {
		return Observation{}, fmt.Errorf("memory.available: %s: %w", path, err)
	}
	if vals["MemTotal"] == 0 {
		return Observation{}, fmt.Errorf("memory.available: %s: no MemTotal", path)
	}
	return Observation{Capacity: vals["MemTotal"], Available: min(vals["MemFree"]+vals["Inactive(file)"], vals["MemTotal"])}, nil
}

// DiskUsage is du of a directory: the blocks of every file below it
// (hard links once) and the number of inodes; symbolic links are not
// followed, a missing directory is zero. A tree the walk cannot go through
// — a container can nest directories until their paths pass PATH_MAX, so
// that lstat fails with ENAMETOOLONG — is measured again by du(1), whose
// fts walks by file descriptors and has no depth limit: a pod must not
// escape its limit by making its files unmeasurable.
func DiskUsage(dir string) (Disk, error) {
	var d Disk
	seen := map[[2]uint64]bool{}
	var walkErr error // the first entry the walk could not go through
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err == nil {
			var info fs.FileInfo
			if info, err = e.Info(); err == nil {
				countFile(&d, seen, e, info)
				return nil
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone while walking, or no such directory
		}
		if walkErr == nil {
			walkErr = err
		}
		if e != nil && e.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err == nil && walkErr != nil {
		err = walkErr
	}
	if err != nil {
		if du, duErr := duCommand(dir); duErr == nil {
			return du, nil
		}
		return d, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return d, nil
}

// countFile adds one walked entry to d (a hard-linked file once).
func countFile(d *Disk, seen map[[2]uint64]bool, e fs.DirEntry, info fs.FileInfo) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	if st.Nlink > 1 && !e.IsDir() {
		key := [2]uint64{uint64(st.Dev), st.Ino}
		if seen[key] {
			return
		}
		seen[key] = true
	}
	d.Bytes += st.Blocks * 512
	d.Inodes++
}

// duTimeout bounds one du(1) run.
const duTimeout = time.Minute

// duCommand measures dir with du(1) (GNU coreutils: blocks in bytes and
// inodes, one file system, links once).
func duCommand(dir string) (Disk, error) {
	ctx, cancel := context.WithTimeout(context.Background(), duTimeout)
	defer cancel()
	var d Disk
	for _, f := range []struct {
		args []string
		to   *int64
	}{{[]string{"-s", "-x", "-B1"}, &d.Bytes}, {[]string{"-s", "-x", "--inodes"}, &d.Inodes}} {
		out, err := exec.CommandContext(ctx, "du", append(f.args, "--", dir)...).Output()
		if err != nil {
			return d, fmt.Errorf("du %s: %w", dir, err)
		}
		field, _, _ := strings.Cut(string(out), "\t")
		if *f.to, err = strconv.ParseInt(strings.TrimSpace(field), 10, 64); err != nil {
			return d, fmt.Errorf("du %s: %q: %w", dir, out, err)
		}
	}
	return d, nil
}

// measurePod reads what the pod uses: memory (pod and containers' cgroups)
// when mem, local storage (writable layers, logs, disk emptyDirs) when disk.
func (m *Manager) measurePod(ctx context.Context, pod *corev1.Pod, mem, disk bool) (*PodUsage, error) {
	// Any cached view: task events keep it fresh, and a container started
	// since is measured next period.
	running, err := m.ctrs.GetNewerThan(ctx, pod.UID, time.Time{})
	if err != nil {
		return nil, err
	}
	u := &PodUsage{Containers: map[string]ContainerUsage{}, Volumes: map[string]Disk{}}
	q := qos.PodQOS(pod)
	if mem {
		st, err := m.cg.PodStats(pod.UID, q)
		if err != nil {
			return nil, err
		}
		u.Memory = int64(st.MemoryWorkingSet)
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		cur := running.Find(c.Name)
		if cur == nil {
			continue
		}
		var cu ContainerUsage
		if mem && cur.State == podstate.StateRunning {
			if st, err := m.cg.ContainerStats(pod.UID, q, cur.ID); err == nil {
				cu.Memory = int64(st.MemoryWorkingSet)
			}
		}
		if disk {
			if cu.Rootfs.Bytes, cu.Rootfs.Inodes, err = m.snaps.SnapshotUsage(ctx, cur.ID); err != nil {
				return nil, err
			}
			if cu.Logs, err = DiskUsage(logs.ContainerDir(m.opts.LogDir, pod.Namespace, pod.Name, string(pod.UID), c.Name)); err != nil {
				return nil, err
			}
		}
		u.Containers[c.Name] = cu
	}
	if disk {
		for _, v := range pod.Spec.Volumes {
			if v.EmptyDir == nil || v.EmptyDir.Medium == corev1.StorageMediumMemory {
				continue
			}
			if u.Volumes[v.Name], err = m.volumeUsage(pod, v.Name); err != nil {
				return nil, err
			}
		}
	}
	return u, nil
}

// volumeUsage measures a disk emptyDir: by its project quota when it has
// one (the kubelet's fsquota.GetConsumption first, as pkg/volume/util/fs),
// else by walking it.
func (m *Manager) volumeUsage(pod *corev1.Pod, volume string) (Disk, error) {
	if m.opts.Quotas != nil {
		b, i, ok, err := m.opts.Quotas.Usage(pod.UID, volume)
		if ok {
			return Disk{Bytes: b, Inodes: i}, nil
		}
		if err != nil {
			m.opts.Logger.Debug("eviction: project quota not read, walking", "pod", pod.Namespace+"/"+pod.Name, "volume", volume, "err", err)
		}
	}
	return DiskUsage(m.opts.VolumeDir(pod.UID, volume))
}
