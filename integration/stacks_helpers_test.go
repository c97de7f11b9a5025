//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podhost/podhost/internal/daemon"
)

// captureStuck records, when a wait fails, what podhost and the suite's
// containerd shims are waiting on: both dump their goroutines on SIGUSR1.
// teardown prints it after the podhost log, so a CI failure shows where a
// pod got stuck, not only that it did.
func (d *podhostd) captureStuck() {
	if d.stuck != "" || d.cmd == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "podhost goroutines in a sync or a runtime call (SIGUSR1 dump, identical stacks folded):\n%s", d.podhostStacks())
	fmt.Fprintf(&b, "shim goroutines (SIGUSR1 dumps from containerd's log):\n%s", shimStacks())
	d.stuck = b.String()
}

func (d *podhostd) podhostStacks() string {
	dir := runDirOf(d)
	if err := d.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		return fmt.Sprintf("  signal podhost: %v\n", err)
	}
	var dump []byte
	_ = waitFor(5*time.Second, func() (bool, error) {
		matches, _ := filepath.Glob(filepath.Join(dir, daemon.StacksFilePrefix+"*"))
		if len(matches) == 0 {
			return false, nil
		}
		sort.Strings(matches)
		var err error
		dump, err = os.ReadFile(matches[len(matches)-1])
		return err == nil && len(dump) > 0, nil
	})
	if dump == nil {
		return "  no dump written in 5 s\n"
	}
	return foldStacks(string(dump), func(fn string) bool {
		return strings.Contains(fn, "/internal/kubelet/syncer.") ||
			strings.Contains(fn, "/internal/host/runtime.") && !strings.Contains(fn, "eventLoop") && !strings.Contains(fn, "pump") && !strings.Contains(fn, ").Events")
	})
}

// shimStacks signals every shim of the suite's containerd and folds the
// dumps they log (one logrus line each, the dump quoted in msg). A shim
// logs to a pipe containerd reads only while the task that started the
// shim lives: in a shared shim whose first container is gone nobody reads
// it and the dump is lost ("1 shims, 0 dumps"), so the harness reads such
// a pipe itself (orphanShimLogs).
func shimStacks() string {
	pids, dumps, orphans := shimDumps()
	if len(pids) == 0 {
		return "  no shims\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %d shims %v, %d dumps (%d read from shims' log pipes containerd no longer reads)\n",
		len(pids), pids, len(dumps), orphans)
	for _, dump := range dumps {
		b.WriteString(foldStacks(dump, func(fn string) bool {
			return strings.Contains(fn, "containerd/v2/") && !strings.Contains(fn, "pkg/shim.serve") &&
				!strings.Contains(fn, "pkg/shim.reap")
		}))
		b.WriteString("  --\n")
	}
	return b.String()
}

// shimDumps signals the suite's shims and returns their PIDs, the dumps
// they wrote within 5 s, and how many shims' log pipes it read itself.
func shimDumps() (pids []int, dumps []string, orphans int) {
	logStart := int64(0)
	if fi, err := os.Stat(env.ContainerdLog); err == nil {
		logStart = fi.Size()
	}
	pids = env.Shims()
	if len(pids) == 0 {
		return nil, nil, 0
	}
	logs := orphanShimLogs(pids)
	defer func() {
		for _, l := range logs {
			l.f.Close()
		}
	}()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGUSR1)
	}
	_ = waitFor(5*time.Second, func() (bool, error) {
		dumps = shimDumpsSince(logStart)
		for _, l := range logs {
			l.drain()
			dumps = append(dumps, parseShimDumps(l.buf.String())...)
		}
		return len(dumps) >= len(pids), nil
	})
	return pids, dumps, len(logs)
}

// shimLog is a shim's log pipe, opened by the harness.
type shimLog struct {
	f   *os.File
	buf strings.Builder
}

// drain reads what the pipe holds now (bounded: 64 MiB).
func (l *shimLog) drain() {
	buf := make([]byte, 64<<10)
	for l.buf.Len() < 64<<20 {
		_ = l.f.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := l.f.Read(buf)
		l.buf.Write(buf[:n])
		if err != nil {
			return
		}
	}
}

// orphanShimLogs opens, through /proc/<pid>/fd/2, the log pipe (stderr) of
// each shim that containerd no longer holds open: a second reader of a
// pipe containerd reads would take part of its dumps.
func orphanShimLogs(pids []int) []*shimLog {
	held := map[[2]uint64]bool{}
	if cpid := env.ContainerdPID(); cpid != 0 {
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cpid))
		for _, fd := range fds {
			if id, ok := fileID(fmt.Sprintf("/proc/%d/fd/%s", cpid, fd.Name())); ok {
				held[id] = true
			}
		}
	}
	var out []*shimLog
	for _, pid := range pids {
		path := fmt.Sprintf("/proc/%d/fd/2", pid)
		id, ok := fileID(path)
		if !ok || held[id] {
			continue
		}
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			out = append(out, &shimLog{f: f})
		}
	}
	return out
}

// fileID is the device and inode of the named pipe path leads to; false
// for anything else.
func fileID(path string) ([2]uint64, bool) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return [2]uint64{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, false
	}
	return [2]uint64{st.Dev, st.Ino}, true
}

func shimDumpsSince(offset int64) []string {
	b, err := os.ReadFile(env.ContainerdLog)
	if err != nil || int64(len(b)) < offset {
		return nil
	}
	return parseShimDumps(string(b[offset:]))
}

// parseShimDumps returns the goroutine dumps of the shim log lines in text.
func parseShimDumps(text string) []string {
	var dumps []string
	for _, line := range strings.Split(text, "\n") {
		i := strings.Index(line, `msg="=== BEGIN goroutine stack dump ===`)
		if i < 0 {
			continue
		}
		quoted, err := strconv.QuotedPrefix(line[i+len("msg="):])
		if err != nil {
			continue
		}
		if s, err := strconv.Unquote(quoted); err == nil {
			dumps = append(dumps, s)
		}
	}
	return dumps
}

// foldStacks folds a goroutine dump (runtime.Stack / pprof debug=2 format)
// to its distinct stacks that have a frame keep accepts: a count, the
// states, the function names (no arguments, no files).
func foldStacks(dump string, keep func(fn string) bool) string {
	type group struct {
		n      int
		states map[string]bool
		frames []string
	}
	groups := map[string]*group{}
	for _, block := range strings.Split(dump, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[0], "goroutine ") {
			continue
		}
		state := lines[0][strings.Index(lines[0], "[")+1 : max(strings.LastIndex(lines[0], "]"), strings.Index(lines[0], "[")+1)]
		var frames []string
		kept := false
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "\t") {
				continue
			}
			if i := strings.LastIndex(l, "("); i > 0 && !strings.HasPrefix(l, "created by") {
				l = l[:i]
			}
			if i := strings.Index(l, " in goroutine "); i > 0 && strings.HasPrefix(l, "created by") {
				l = l[:i] // the creator's number differs for every pod's sync
			}
			frames = append(frames, l)
			kept = kept || keep(l)
		}
		if !kept {
			continue
		}
		key := strings.Join(frames, "\n")
		g := groups[key]
		if g == nil {
			g = &group{states: map[string]bool{}, frames: frames}
			groups[key] = g
		}
		g.n++
		g.states[state] = true
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return groups[keys[i]].n > groups[keys[j]].n })
	var b strings.Builder
	for _, k := range keys {
		g := groups[k]
		states := make([]string, 0, len(g.states))
		for s := range g.states {
			states = append(states, s)
		}
		sort.Strings(states)
		fmt.Fprintf(&b, "  %d× [%s]\n", g.n, strings.Join(states, "; "))
		for i, f := range g.frames {
			if i == 14 {
				fmt.Fprintf(&b, "      … %d more\n", len(g.frames)-i)
				break
			}
			fmt.Fprintf(&b, "      %s\n", f)
		}
	}
	return b.String()
}
