package logs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podhost/podhost/internal/logdriver"
)

// ParsePodDir parses a pod log directory's name, <ns>_<name>_<uid>
// (namespaces and names have no '_').
func ParsePodDir(dirName string) (namespace, name, uid string, ok bool) {
	parts := strings.Split(dirName, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// ErrDriverWriting: a log driver still writes under the logs to remove;
// RemovePod's error wraps it, and removes nothing.
var ErrDriverWriting = errors.New("a log driver still writes there")

// Remover removes the log directories of a deleted pod, as the kubelet's
// removeContainerLog does when it removes a container: the syncer calls it
// once the pod's containers are gone.
type Remover struct {
	Root string // the log dir (config logDir)
	// ProcRoot is where running log drivers are looked for ("" = /proc).
	ProcRoot string
}

// podDir is one <ns>_<name>_<uid> directory and its container directories.
type podDir struct {
	Path       string
	Containers []string
}

// RemovePod removes the logs of pod uid under Root: its whole
// <ns>_<name>_<uid> directory or, when keep names containers, the
// directories of its other containers (a pod that kept some of its
// containers keeps their logs). It removes nothing while a log driver
// still writes a file there: the error names it, and the caller retries.
func (r Remover) RemovePod(ctx context.Context, uid string, keep map[string]bool) error {
	dirs, err := r.podDirs(uid, len(keep) > 0)
	if err != nil {
		return err
	}
	targets := removalTargets(dirs, keep)
	if len(targets) == 0 {
		return nil
	}
	busy, err := driversWriting(r.procRoot(), targets)
	if err != nil {
		return err
	}
	if len(busy) > 0 {
		return fmt.Errorf("logs of pod %s: %w (pid %d writes %s)", uid, ErrDriverWriting, busy[0].PID, busy[0].Path)
	}
	var errs []error
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("logs of pod %s: %w", uid, err)
		}
		if err := os.RemoveAll(t); err != nil {
			errs = append(errs, fmt.Errorf("logs of pod %s: %w", uid, err))
		}
	}
	return errors.Join(errs...)
}

func (r Remover) procRoot() string {
	if r.ProcRoot == "" {
		return "/proc"
	}
	return r.ProcRoot
}

// podDirs lists pod uid's directories under Root (with their container
// directories when containers is set).
func (r Remover) podDirs(uid string, containers bool) ([]podDir, error) {
	ents, err := os.ReadDir(r.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("logs of pod %s: %w", uid, err)
	}
	var out []podDir
	for _, e := range ents {
		if _, _, u, ok := ParsePodDir(e.Name()); !ok || u != uid || !e.IsDir() {
			continue
		}
		d := podDir{Path: filepath.Join(r.Root, e.Name())}
		if containers {
			cs, err := os.ReadDir(d.Path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("logs of pod %s: %w", uid, err)
			}
			for _, c := range cs {
				if c.IsDir() {
					d.Containers = append(d.Containers, c.Name())
				}
			}
		}
		out = append(out, d)
	}
	return out, nil
}

// removalTargets are the paths RemovePod removes: the pod directories, or
// with keep set, their container directories keep does not name.
func removalTargets(dirs []podDir, keep map[string]bool) []string {
	var out []string
	for _, d := range dirs {
		if len(keep) == 0 {
			out = append(out, d.Path)
			continue
		}
		for _, c := range d.Containers {
			if !keep[c] {
				out = append(out, filepath.Join(d.Path, c))
			}
		}
	}
	return out
}

// driverProc is a running log driver and the file it writes.
type driverProc struct {
	PID  int
	Path string
}

// driversWriting lists the log drivers running on the host (any process
// whose argv is a log driver's, as logdriver.ParseArgs reads it: the C
// driver and `podhost log-driver`) whose file lies under one of dirs.
// The shim stops a task's driver when the task is deleted (SIGTERM, then
// SIGKILL after 12 s), so after a container's removal its driver is gone;
// one whose shim died drains its pipes and exits by itself.
func driversWriting(procRoot string, dirs []string) ([]driverProc, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("look for running log drivers: %w", err)
	}
	var out []driverProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
		if err != nil {
			continue // exited meanwhile, or not ours to read
		}
		path, ok := driverPath(cmdline)
		if !ok {
			continue
		}
		for _, d := range dirs {
			if within(path, d) {
				out = append(out, driverProc{PID: pid, Path: path})
				break
			}
		}
	}
	return out, nil
}

// driverPath is the log file of a log driver's /proc/<pid>/cmdline
// (NUL-separated argv), false for any other process.
func driverPath(cmdline []byte) (string, bool) {
	argv := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if len(argv) != 3 || argv[1] != DriverCommand {
		return "", false
	}
	cfg, err := logdriver.ParseArgs(argv)
	if err != nil {
		return "", false
	}
	return filepath.Clean(cfg.Path), true
}

// within: path is dir or below it.
func within(path, dir string) bool {
	dir = filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
