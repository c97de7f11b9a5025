//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/testenv"
)

// counterPod prints "n <i>" forever, ~100 lines a second.
func counterPod(name string) string {
	return podManifest(name, fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "i=0; while true; do echo n $i; i=$((i+1)); sleep 0.01; done"]
`, env.ImageRef))
}

// TestLogsFlowWhileDownRotated: the shim runs podhost-log-driver (the
// binary beside podhost, not podhost itself); with podhost SIGKILLed the
// container's log keeps growing, in CRI format, and keeps rotating
// (logMaxSize 2Ki, 2 files kept); after a restart it still flows.
func TestLogsFlowWhileDownRotated(t *testing.T) {
	d := newPodhostd(t)
	appendConfig(t, d, "logMaxSize: 2Ki\nlogMaxFiles: 2\n")
	d.start()
	d.writeManifest("counter.yaml", counterPod("counter"))
	p := d.waitRunning("counter")
	path := logPath(d, p, "main", 0)
	// The shim may serve other pods (shim groups): count the drivers
	// writing this container's log.
	shim := testenv.ParentPID(containerPID(t, p, "main"))
	if drivers := driversOf(shim, env.LogDriverBin, path); len(drivers) != 1 {
		t.Fatalf("shim %d runs %d %s processes for %s, want 1", shim, len(drivers), env.LogDriverBin, path)
	}

	d.kill(syscall.SIGKILL)
	down := lastCounter(t, path)
	// Two rotations' worth of new lines while podhost is down.
	if err := waitFor(30*time.Second, func() (bool, error) {
		_, err := os.Stat(logs.RotatedPath(path, 2))
		return err == nil && lastCounter(t, path) > down+200, nil
	}); err != nil {
		t.Fatalf("log did not flow and rotate while podhost was down (last %d at kill): %v", down, err)
	}
	if _, err := os.Stat(logs.RotatedPath(path, 3)); !os.IsNotExist(err) {
		t.Fatalf("%s must not exist (logMaxFiles 2): %v", logs.RotatedPath(path, 3), err)
	}
	checkContiguous(t, path, 2)

	d.start()
	up := lastCounter(t, path)
	if err := waitFor(30*time.Second, func() (bool, error) { return lastCounter(t, path) > up+50, nil }); err != nil {
		t.Fatalf("log did not flow after restart: %v", err)
	}
}

// counters parses every record of file (CRI format, failing on anything
// else) and returns the counters of the "n <i>" lines.
func counters(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rec, err := logs.ParseRecord(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %q: %v", file, sc.Text(), err)
		}
		if rec.Stream != logs.Stdout || rec.Partial {
			t.Fatalf("%s: unexpected record %q", file, sc.Text())
		}
		n, err := strconv.Atoi(strings.TrimPrefix(string(rec.Msg), "n "))
		if err != nil {
			t.Fatalf("%s: message %q", file, rec.Msg)
		}
		out = append(out, n)
	}
	return out
}

func lastCounter(t *testing.T, path string) int {
	c := counters(t, path)
	if len(c) == 0 {
		return -1
	}
	return c[len(c)-1]
}

// checkContiguous: the rotated files (oldest first) and the live one hold
// consecutive counters, nothing lost or repeated at a rotation.
func checkContiguous(t *testing.T, path string, kept int) {
	t.Helper()
	var all []int
	for i := kept; i >= 1; i-- {
		all = append(all, counters(t, logs.RotatedPath(path, i))...)
	}
	all = append(all, counters(t, path)...)
	for i := 1; i < len(all); i++ {
		if all[i] != all[i-1]+1 {
			t.Fatalf("counter %d follows %d across the rotated files", all[i], all[i-1])
		}
	}
}

// TestTTYContainerLogsConsole: a container with tty: true runs with a
// terminal (its stdout is a pty on the host, not a pipe) and what it
// writes reaches its log as stdout records, as containerd's CRI logs a
// tty container.
func TestTTYContainerLogsConsole(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("tty.yaml", podManifest("tty", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    tty: true
    command: ["sh", "-c", "tty; echo to-err >&2; echo done; exec sleep 3600"]
`, env.ImageRef)))
	p := d.waitRunning("tty")
	pid := containerPID(t, p, "main")
	for _, fd := range []string{"0", "1", "2"} {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd)); err != nil || !strings.HasPrefix(l, "/dev/pts/") {
			t.Errorf("fd %s of the container's process: %q (%v), want a /dev/pts/ terminal", fd, l, err)
		}
	}
	path := logPath(d, p, "main", 0)
	var log []byte
	if err := waitFor(20*time.Second, func() (bool, error) {
		log, _ = os.ReadFile(path)
		return bytes.Contains(log, []byte("done")), nil
	}); err != nil {
		t.Fatalf("log %s: %v\n%s", path, err, log)
	}
	for _, want := range []string{" stdout F /dev/pts/", " stdout F to-err", " stdout F done"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("log %s lacks %q:\n%s", path, want, log)
		}
	}
	// The driver ends with its container. For a terminal the shim hands
	// the driver a stderr pipe whose write end it drops unclosed
	// (runc/platform.go CopyConsole): the driver sees its EOF once the
	// shim's garbage collector closes it, at the latest at the shim's
	// forced GC every 30 s (pkg/shim setRuntime); in practice long before.
	drivers := driversOf(testenv.ParentPID(pid), env.LogDriverBin, path)
	if len(drivers) != 1 {
		t.Fatalf("%d log drivers for %s, want 1", len(drivers), path)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := waitFor(45*time.Second, func() (bool, error) {
		return syscall.Kill(drivers[0], 0) == syscall.ESRCH, nil
	}); err != nil {
		t.Errorf("log driver %d still runs %s after its container was killed", drivers[0], time.Since(t0).Round(time.Millisecond))
	}
	t.Logf("log driver gone %s after the kill", time.Since(t0).Round(time.Millisecond))
}
