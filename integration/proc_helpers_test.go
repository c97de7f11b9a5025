//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/podhost/podhost/internal/testenv"
)

// statFields returns the fields of /proc/<pid>/stat after "(comm)" (state,
// ppid, ...); nil if pid is gone. comm may hold spaces: cut at the last ')'.
func statFields(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] != "Z"
}

// childrenByExe returns the children of parent whose executable is exe
// ("" = any).
func childrenByExe(parent int, exe string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || testenv.ParentPID(pid) != parent {
			continue
		}
		if exe != "" {
			if got, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); got != exe {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// driversOf returns the children of shim running the log driver exe for
// the log file path (its argv carries the path, query-encoded).
func driversOf(shim int, exe, path string) []int {
	var out []int
	for _, pid := range childrenByExe(shim, exe) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if strings.Contains(string(cmdline), "path="+url.QueryEscape(path)) {
			out = append(out, pid)
		}
	}
	return out
}

// pssKiB returns the proportional set size of pid from smaps_rollup (0 if
// it is gone).
func pssKiB(pid int) int {
	return procField(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"), "Pss:")
}

// rssKiB returns the RSS of pid, from smaps_rollup (exact; the status
// file's counters are approximate).
func rssKiB(pid int) int {
	return procField(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"), "Rss:")
}

// rssSplitKiB returns the anonymous and the file-backed (and shared) parts
// of pid's RSS, from smaps_rollup.
func rssSplitKiB(pid int) (anon, file int) {
	p := filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup")
	rss, anon := procField(p, "Rss:"), procField(p, "Anonymous:")
	return anon, rss - anon
}

func procField(path, key string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
