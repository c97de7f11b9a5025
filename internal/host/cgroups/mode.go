package cgroups

import (
	"path/filepath"

	cgroupsv3 "github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// detectMode reports the cgroup mode of root. For the real root it asks
// containerd/cgroups (cached for the process); other roots are statfs'd the
// same way (a plain dir reads as legacy, which tests override).
func detectMode(root string) string {
	if filepath.Clean(root) == DefaultRoot {
		switch cgroupsv3.Mode() {
		case cgroupsv3.Unified:
			return ModeUnified
		case cgroupsv3.Hybrid:
			return ModeHybrid
		case cgroupsv3.Legacy:
			return ModeLegacy
		default:
			return ModeUnavailable
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return ModeUnavailable
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return ModeUnified
	}
	if err := unix.Statfs(filepath.Join(root, "unified"), &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		return ModeHybrid
	}
	return ModeLegacy
}

// isCgroupMount tells whether path is the root of a cgroup (v1 or v2) mount.
func isCgroupMount(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.CGROUP_SUPER_MAGIC || st.Type == unix.CGROUP2_SUPER_MAGIC
}
