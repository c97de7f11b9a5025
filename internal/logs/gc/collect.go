package gc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/logs"
)

// Collector applies Plan to a log directory.
type Collector struct {
	Root   string
	Policy Policy
	Log    *slog.Logger
}

// Collect removes what Plan picks. active tells whether a pod still exists
// (housekeeping's view: desired, known to a worker, in the runtime or
// with a sandbox record), so the logs a pod's cleanup left outlive it by
// at most one pass and never precede it.
func (c *Collector) Collect(ctx context.Context, active func(types.UID) bool) error {
	dirs, err := Scan(c.Root)
	if err != nil {
		return err
	}
	rmDirs, rmFiles := Plan(dirs, func(uid string) bool { return active(types.UID(uid)) }, c.Policy)
	var errs []error
	for _, d := range rmDirs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log().Info("removing logs of a removed pod", "dir", d)
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("loggc: %w", err))
		}
	}
	for _, f := range rmFiles {
		c.log().Debug("removing old log file", "path", f)
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("loggc: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (c *Collector) log() *slog.Logger {
	if c.Log == nil {
		return slog.Default()
	}
	return c.Log
}

// Scan lists the pod directories under root (<ns>_<name>_<uid>) and their
// log files. Entries that do not follow the layout are left out (never
// removed).
func Scan(root string) ([]PodDir, error) {
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loggc: %w", err)
	}
	var out []PodDir
	for _, e := range ents {
		_, _, uid, ok := logs.ParsePodDir(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		d := PodDir{Path: filepath.Join(root, e.Name()), UID: uid}
		d.Files, err = scanPod(d.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func scanPod(dir string) ([]File, error) {
	ctrs, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("loggc: %w", err)
	}
	var out []File
	for _, c := range ctrs {
		if !c.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, c.Name()))
		if err != nil {
			return nil, fmt.Errorf("loggc: %w", err)
		}
		for _, f := range files {
			restart, rot, ok := parseName(f.Name())
			if !ok || !f.Type().IsRegular() {
				continue
			}
			info, err := f.Info()
			if err != nil {
				continue // removed meanwhile (rotation)
			}
			out = append(out, File{Path: filepath.Join(dir, c.Name(), f.Name()), Container: c.Name(),
				Restart: restart, Rotation: rot, Size: info.Size(), ModTime: info.ModTime()})
		}
	}
	return out, nil
}

// parseName parses <restart>.log and <restart>.log.<rotation>.
func parseName(name string) (restart, rotation int, ok bool) {
	base, rot, found := strings.Cut(name, ".log")
	n, err := strconv.Atoi(base)
	if !found || err != nil || n < 0 {
		return 0, 0, false
	}
	if rot == "" {
		return n, 0, true
	}
	r, err := strconv.Atoi(strings.TrimPrefix(rot, "."))
	if !strings.HasPrefix(rot, ".") || err != nil || r < 1 {
		return 0, 0, false
	}
	return n, r, true
}
