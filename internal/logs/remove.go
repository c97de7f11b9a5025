package logs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/logs/driver"
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
// a removal's error wraps it, and the pod's logs are left untouched.
var ErrDriverWriting = errors.New("a log driver still writes there")

// Remover removes the log directories of a deleted pod, as the kubelet's
// removeContainerLog does when it removes a container: the syncer calls it
// once the pod's containers are gone.
type Remover struct {
	Root string // the log dir (config logDir)
	// ProcRoot is where running log drivers are looked for ("" = /proc).
	ProcRoot string
	// Comms are the process names (/proc/<pid>/comm) of the log drivers,
	// DriverComms of their executables; nil: DriverComms(DefaultDrivers...).
	Comms []string
}

// DefaultDrivers are the executables a log driver runs as by default: the
// driver beside podhost (native/podhost-log-driver, or
// cmd/podhost-log-driver without a C compiler) and podhost itself
// (`podhost log-driver`, the fallback).
var DefaultDrivers = []string{"podhost-log-driver", "podhost"}

// commLen is the kernel's TASK_COMM_LEN less the NUL: a comm is the first
// 15 bytes of the executable's file name.
const commLen = 15

// DriverComms are the comm names of processes running the executables
// paths (a path or a file name; "" is skipped), as the kernel sets them at
// exec: the file name, cut to 15 bytes.
func DriverComms(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		c := filepath.Base(p)
		if len(c) > commLen {
			c = c[:commLen]
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Removal is the outcome of one pod's log removal.
type Removal struct {
	Removed int   // directories removed
	Err     error // wraps ErrDriverWriting while a log driver writes there
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
// still writes a file there: the error wraps ErrDriverWriting and names
// the driver, and the caller retries later. removed counts the
// directories it removed.
func (r Remover) RemovePod(ctx context.Context, uid types.UID, keep map[string]bool) (removed int, err error) {
	res := r.remove(ctx, map[types.UID]map[string]bool{uid: keep})[uid]
	return res.Removed, res.Err
}

// RemovePods removes the whole log directories of the pods uids, as
// RemovePod, with one look at the running processes for them all.
func (r Remover) RemovePods(ctx context.Context, uids []types.UID) map[types.UID]Removal {
	pods := make(map[types.UID]map[string]bool, len(uids))
	for _, uid := range uids {
		pods[uid] = nil
	}
	return r.remove(ctx, pods)
}

// remove removes the logs of each pod of pods but those of the containers
// it maps the pod to.
func (r Remover) remove(ctx context.Context, pods map[types.UID]map[string]bool) map[types.UID]Removal {
	out := make(map[types.UID]Removal, len(pods))
	fail := func(err error) map[types.UID]Removal {
		for uid := range pods {
			out[uid] = Removal{Err: fmt.Errorf("logs of pod %s: %w", uid, err)}
		}
		return out
	}
	dirs, err := r.podDirs(pods)
	if err != nil {
		return fail(err)
	}
	targets := map[types.UID][]string{}
	var all []string
	for uid, keep := range pods {
		targets[uid] = removalTargets(dirs[uid], keep)
		all = append(all, targets[uid]...)
	}
	var busy []driverProc
	if len(all) > 0 {
		if busy, err = driversWriting(ctx, r.procRoot(), r.comms(), all); err != nil {
			return fail(err)
		}
	}
	for uid := range pods {
		out[uid] = removeTargets(ctx, uid, targets[uid], busy)
	}
	return out
}

// removeTargets removes pod uid's targets unless a driver of busy writes
// under one of them.
func removeTargets(ctx context.Context, uid types.UID, targets []string, busy []driverProc) Removal {
	for _, b := range busy {
		for _, t := range targets {
			if within(b.Path, t) {
				return Removal{Err: fmt.Errorf("logs of pod %s: %w (pid %d writes %s)", uid, ErrDriverWriting, b.PID, b.Path)}
			}
		}
	}
	var res Removal
	var errs []error
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := os.RemoveAll(t); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Removed++
	}
	if err := errors.Join(errs...); err != nil {
		res.Err = fmt.Errorf("logs of pod %s: %w", uid, err)
	}
	return res
}

func (r Remover) procRoot() string {
	if r.ProcRoot == "" {
		return "/proc"
	}
	return r.ProcRoot
}

func (r Remover) comms() []string {
	if r.Comms == nil {
		return DriverComms(DefaultDrivers...)
	}
	return r.Comms
}

// podDirs lists the directories under Root of the pods of pods (with
// their container directories for a pod that keeps some).
func (r Remover) podDirs(pods map[types.UID]map[string]bool) (map[types.UID][]podDir, error) {
	ents, err := os.ReadDir(r.Root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[types.UID][]podDir{}
	for _, e := range ents {
		_, _, u, ok := ParsePodDir(e.Name())
		keep, want := pods[types.UID(u)]
		if !ok || !want || !e.IsDir() {
			continue
		}
		d := podDir{Path: filepath.Join(r.Root, e.Name())}
		if len(keep) > 0 {
			cs, err := os.ReadDir(d.Path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			for _, c := range cs {
				if c.IsDir() {
					d.Containers = append(d.Containers, c.Name())
				}
			}
		}
		out[types.UID(u)] = append(out[types.UID(u)], d)
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

// driversWriting lists the log drivers running on the host whose file
// lies under one of dirs: processes named as a driver (comms, from
// /proc/<pid>/comm) whose argv is a log driver's, as driver.ParseArgs
// reads it. comm comes first: reading a process's cmdline takes its mmap
// lock and can block behind a stuck process, comm does not. The shim
// stops a task's driver when the task is deleted (SIGTERM, then SIGKILL
// after 12 s), so after a container's removal its driver is gone; one
// whose shim died drains its pipes and exits by itself.
//
// It fails open: a driver it cannot see (/proc mounted with hidepid, a
// separate PID namespace, a driver executable named otherwise) does not
// hold the removal back.
func driversWriting(ctx context.Context, procRoot string, comms, dirs []string) ([]driverProc, error) {
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("look for running log drivers: %w", err)
	}
	var out []driverProc
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("look for running log drivers: %w", err)
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm"))
		if err != nil || !slices.Contains(comms, strings.TrimSuffix(string(comm), "\n")) {
			continue // exited meanwhile, not ours to read, or not a driver
		}
		cmdline, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "cmdline"))
		if err != nil {
			continue
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
	cfg, err := driver.ParseArgs(argv) // refuses any other command line
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
