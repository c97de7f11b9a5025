package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/prometheus/procfs"
)

// shimBinary is the shim podhost's containers run in (runc v2, grouped).
const shimBinary = "containerd-shim-runc-v2"

// defaultRuncRoot is where containerd-shim-runc-v2 keeps runc's state
// (<root>/<namespace>/<id>/state.json) unless the runtime options set a
// Root, which podhost never does.
const defaultRuncRoot = "/run/containerd/runc"

// maxRuncState bounds the read of one runc state.json (it holds the
// container's config: a few KiB; a larger file is not runc's).
const maxRuncState = 1 << 20

// maxShimDepth bounds the walk up from a container's init to its shim: the
// shim is the init's parent (it is a subreaper), or its grandparent while
// runc create still runs.
const maxShimDepth = 4

// procShims finds the shim of a group of containers from the host alone —
// runc's state files and /proc — never through the shim or containerd's
// task API, which both hang when the shim is wedged. A process counts as
// the shim only if /proc shows it is containerd-shim-runc-v2 serving this
// namespace for this containerd address.
type procShims struct {
	procRoot  string // "/proc"
	runcRoot  string // defaultRuncRoot
	namespace string
	address   string // containerd's gRPC address; "" matches any
}

// find returns the distinct shim PIDs the containers ids run in, and for
// each id it could not place, why.
func (p procShims) find(ids []string) (pids []int, misses []error) {
	for _, id := range ids {
		pid, err := p.shimOf(id)
		if err != nil {
			misses = append(misses, fmt.Errorf("container %s: %w", id, err))
			continue
		}
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return pids, misses
}

// shimOf walks up from the init process runc recorded for container id to
// the first ancestor that is this namespace's shim.
func (p procShims) shimOf(id string) (int, error) {
	if id == "" || id != filepath.Base(id) || id == "." || id == ".." {
		return 0, fmt.Errorf("bad container id %q", id)
	}
	pid, start, err := p.initProcess(id)
	if err != nil {
		return 0, err
	}
	if err := p.sameProcess(pid, start); err != nil {
		return 0, err
	}
	for depth := 0; depth < maxShimDepth && pid > 1; depth++ {
		ppid, err := p.parent(pid)
		if err != nil {
			return 0, err
		}
		if p.isShim(ppid) {
			return ppid, nil
		}
		pid = ppid
	}
	return 0, fmt.Errorf("no %s of namespace %s above its init process", shimBinary, p.namespace)
}

// initProcess reads init_process_pid and init_process_start (its start
// time in clock ticks since boot) from runc's state.json of container id.
func (p procShims) initProcess(id string) (pid int, start uint64, err error) {
	path := filepath.Join(p.runcRoot, p.namespace, id, "state.json")
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("runc state: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRuncState+1))
	if err != nil {
		return 0, 0, fmt.Errorf("runc state %s: %w", path, err)
	}
	if len(b) > maxRuncState {
		return 0, 0, fmt.Errorf("runc state %s: larger than %d bytes", path, maxRuncState)
	}
	var st struct {
		InitProcessPID   int    `json:"init_process_pid"`
		InitProcessStart uint64 `json:"init_process_start"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return 0, 0, fmt.Errorf("runc state %s: %w", path, err)
	}
	if st.InitProcessPID <= 1 {
		return 0, 0, fmt.Errorf("runc state %s: no init process pid", path)
	}
	return st.InitProcessPID, st.InitProcessStart, nil
}

// sameProcess: pid started at start (runc's check that a PID is still its
// init): a PID reused since the container's init exited leads nowhere.
func (p procShims) sameProcess(pid int, start uint64) error {
	proc, err := p.proc(pid)
	if err != nil {
		return err
	}
	st, err := proc.Stat()
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	if st.Starttime != start {
		return fmt.Errorf("process %d started at %d, not at the init's %d: its PID was reused", pid, st.Starttime, start)
	}
	return nil
}

// parent is pid's parent, from /proc/<pid>/stat.
func (p procShims) parent(pid int) (int, error) {
	proc, err := p.proc(pid)
	if err != nil {
		return 0, err
	}
	st, err := proc.Stat()
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	return st.PPID, nil
}

// isShim: pid is containerd-shim-runc-v2 (its comm, which the kernel
// truncates to 15 bytes, and its argv[0]) with `-namespace <namespace>`
// and, when p.address is set, `-address <address>`.
func (p procShims) isShim(pid int) bool {
	proc, err := p.proc(pid)
	if err != nil {
		return false
	}
	if comm, err := proc.Comm(); err != nil || comm != shimBinary[:15] {
		return false
	}
	args, err := proc.CmdLine()
	if err != nil || len(args) == 0 || filepath.Base(args[0]) != shimBinary {
		return false
	}
	return flagIs(args, "-namespace", p.namespace) && (p.address == "" || flagIs(args, "-address", p.address))
}

func (p procShims) proc(pid int) (procfs.Proc, error) {
	fs, err := procfs.NewFS(p.procRoot)
	if err != nil {
		return procfs.Proc{}, fmt.Errorf("%s: %w", p.procRoot, err)
	}
	proc, err := fs.Proc(pid)
	if err != nil {
		return procfs.Proc{}, fmt.Errorf("process %d: %w", pid, err)
	}
	return proc, nil
}

// flagIs: args hold `name value` (or `name=value`), and no other value
// of name.
func flagIs(args []string, name, value string) bool {
	found := false
	for i, a := range args {
		var v string
		switch {
		case a == name && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, name+"="):
			v = a[len(name)+1:]
		default:
			continue
		}
		if v != value {
			return false
		}
		found = true
	}
	return found
}
