// Package logs owns podhost's container logs: the CRI-format log driver that
// the containerd shim spawns for every task (see docs/ARCHITECTURE.md), and reading /
// following those files for `podhost logs`.
//
// On-disk format (one line per record, as the kubelet/CRI writes it):
//
//	<RFC3339Nano time> <stdout|stderr> <P|F> <message>\n
//
// P marks a partial record (a line longer than MaxLineSize split into
// chunks, or interrupted); F marks the record that completes a line.
// Rotation is size based: <path> is the live file, <path>.1 the newest
// rotated one ... <path>.N the oldest.
package logs

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/podhost/podhost/internal/logs/driver"
)

// DefaultRoot is where pod logs live (kubelet's layout).
const DefaultRoot = "/var/log/pods"

// PodDir returns <root>/<ns>_<name>_<uid>.
func PodDir(root, namespace, name, uid string) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", namespace, name, uid))
}

// ContainerDir returns <root>/<ns>_<name>_<uid>/<container>.
func ContainerDir(root, namespace, name, uid, container string) string {
	return filepath.Join(PodDir(root, namespace, name, uid), container)
}

// Path returns <root>/<ns>_<name>_<uid>/<container>/<restartCount>.log.
func Path(root, namespace, name, uid, container string, restartCount int) string {
	return filepath.Join(ContainerDir(root, namespace, name, uid, container),
		strconv.Itoa(restartCount)+".log")
}

// RotatedPath returns the name of the n-th rotated file of path (n >= 1).
func RotatedPath(path string, n int) string { return driver.RotatedPath(path, n) }
