package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/v2/core/mount"
)

// ownTempMounts makes dir (in the state dir: never shared by two
// instances) the place of the containerd client's temporary mounts, which
// oci.WithUser and WithAdditionalGIDs make of a container's rootfs to read
// its /etc/passwd and /etc/group, and removes what a podhost killed in the
// middle of one left there: the mount (which pins the snapshot) and its
// dir. containerd does the same for its own at start (CleanupTempMounts).
// Unmounted first, a leftover dir is removed with os.Remove, never
// RemoveAll, so nothing is deleted through a mount.
func ownTempMounts(dir string, log *slog.Logger) error {
	if err := mount.SetTempMountLocation(dir); err != nil {
		return fmt.Errorf("temp mount dir %s: %w", dir, err)
	}
	warnings, err := mount.CleanupTempMounts(0)
	for _, w := range warnings {
		log.Warn("leftover temp mount", "err", w)
	}
	if err != nil {
		log.Warn("clean up leftover temp mounts", "dir", dir, "err", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
			log.Info("removed a leftover temp mount dir", "dir", filepath.Join(dir, e.Name()))
		}
	}
	return nil
}
