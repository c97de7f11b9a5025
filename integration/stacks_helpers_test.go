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
// dumps they log (one logrus line each, the dump quoted in msg).
func shimStacks() string {
	logStart := int64(0)
	if fi, err := os.Stat(env.ContainerdLog); err == nil {
		logStart = fi.Size()
	}
	pids := env.Shims()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGUSR1)
	}
	if len(pids) == 0 {
		return "  no shims\n"
	}
	var dumps []string
	_ = waitFor(5*time.Second, func() (bool, error) {
		dumps = shimDumpsSince(logStart)
		return len(dumps) >= len(pids), nil
	})
	var b strings.Builder
	fmt.Fprintf(&b, "  %d shims %v, %d dumps\n", len(pids), pids, len(dumps))
	for _, dump := range dumps {
		b.WriteString(foldStacks(dump, func(fn string) bool {
			return strings.Contains(fn, "containerd/v2/") && !strings.Contains(fn, "pkg/shim.serve") &&
				!strings.Contains(fn, "pkg/shim.reap")
		}))
		b.WriteString("  --\n")
	}
	return b.String()
}

func shimDumpsSince(offset int64) []string {
	b, err := os.ReadFile(env.ContainerdLog)
	if err != nil || int64(len(b)) < offset {
		return nil
	}
	var dumps []string
	for _, line := range strings.Split(string(b[offset:]), "\n") {
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
