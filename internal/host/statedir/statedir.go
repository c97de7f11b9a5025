// Package statedir keeps podhost's state directory closed to the machine's
// other local users, as the kubelet keeps its root directory: the kubelet
// makes /var/lib/kubelet and its pods/, pods/<uid>/, volumes/ and plugins/
// directories 0750 (setupDataDirs, mkdirs). Everything a pod's volumes
// hold lives below them — Secret files on their tmpfs (0644 by default),
// emptyDirs (0777), termination logs (0666): the modes containers need,
// since a container sees the volume through its own mount, never through
// these parents. Only the parents keep other host users out, so they must
// have no bit for others and no group write.
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// Mode is the mode podhost gives the directories it makes here.
const Mode fs.FileMode = 0o750

// loose are the bits a locked directory must not have: group write and
// anything for others.
const loose fs.FileMode = 0o027

// PodsDir is the pods' directory under the state dir (volumes.Manager's
// root).
func PodsDir(stateDir string) string { return filepath.Join(stateDir, "pods") }

// Problem is one directory other local users could enter, list or write
// into.
type Problem struct {
	Path string
	Mode fs.FileMode // its permission bits
	UID  int         // its owner
}

// Open reports whether the problem is the mode (else it is the owner).
func (p Problem) Open() bool { return p.Mode&loose != 0 }

func (p Problem) String() string {
	if p.Open() {
		return fmt.Sprintf("%s is mode %04o", p.Path, p.Mode)
	}
	return fmt.Sprintf("%s is owned by uid %d", p.Path, p.UID)
}

// Audit returns the state dir's locked directories (the dir, pods/, each
// pods/<uid>/ and its volumes/ and plugins/) that have a bit of loose or
// that another user than uid owns. A missing one is no problem.
func Audit(stateDir string, uid int) ([]Problem, error) {
	dirs, err := lockedDirs(stateDir)
	var out []Problem
	for _, d := range dirs {
		fi, statErr := os.Lstat(d)
		if errors.Is(statErr, fs.ErrNotExist) {
			continue
		}
		if statErr != nil {
			err = errors.Join(err, statErr)
			continue
		}
		if !fi.IsDir() {
			continue
		}
		owner := uid
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			owner = int(st.Uid)
		}
		if fi.Mode().Perm()&loose != 0 || owner != uid {
			out = append(out, Problem{Path: d, Mode: fi.Mode().Perm(), UID: owner})
		}
	}
	return out, err
}

// lockedDirs lists the directories Audit checks.
func lockedDirs(stateDir string) ([]string, error) {
	dirs := []string{stateDir, PodsDir(stateDir)}
	entries, err := os.ReadDir(PodsDir(stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pod := filepath.Join(PodsDir(stateDir), e.Name())
		dirs = append(dirs, pod, filepath.Join(pod, "volumes"), filepath.Join(pod, "plugins"))
	}
	return dirs, err
}

// Secure makes the state dir and pods/ (Mode) if missing, then removes the
// loose bits of every directory Audit names, logging each change. A
// directory owned by another user is logged, not changed: its owner could
// open it again.
func Secure(stateDir string, log *slog.Logger) error {
	for _, d := range []string{stateDir, PodsDir(stateDir)} {
		if err := os.MkdirAll(d, Mode); err != nil {
			return fmt.Errorf("state dir: %w", err)
		}
	}
	problems, err := Audit(stateDir, os.Getuid())
	if err != nil {
		return fmt.Errorf("state dir: %w", err)
	}
	for _, p := range problems {
		if !p.Open() {
			log.Warn("state dir: a directory is owned by another user: other local users may read pods' volumes", "path", p.Path, "uid", p.UID)
			continue
		}
		to := p.Mode &^ loose
		if err := os.Chmod(p.Path, to); err != nil {
			return fmt.Errorf("state dir: tighten %s: %w", p.Path, err)
		}
		log.Warn("state dir: tightened a directory other local users could open", "path", p.Path,
			"from", fmt.Sprintf("%04o", p.Mode), "to", fmt.Sprintf("%04o", to))
	}
	return nil
}
