package driver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The conformance test runs the C driver (native/podhost-log-driver, what
// `make build` installs) and this package's Go driver (the reference: the
// test binary re-executed as `<test binary> log-driver <config>`, see
// TestMain) on the same input through the shim's protocol (fds 3/4/5,
// SIGTERM) and compares exit status and the files they leave behind, with
// the timestamps normalised (but checked: RFC3339Nano, fixed width, never
// going back).

// driverEnv marks the test binary's runs as the Go driver.
const driverEnv = "PODHOST_LOGDRIVER_TEST_DRIVER=1"

func TestMain(m *testing.M) {
	if k, v, _ := strings.Cut(driverEnv, "="); os.Getenv(k) == v {
		Main() // the Go driver under test; never returns
	}
	code := m.Run()
	if cDriverDir != "" {
		os.RemoveAll(cDriverDir)
	}
	os.Exit(code)
}

var (
	cDriverOnce sync.Once
	cDriverDir  string
	cDriverBin  string
	cDriverErr  error
)

// cDriver builds the C driver once with scripts/build-log-driver.sh (the
// flags `make build` uses), or skips the test if there is no C compiler.
func cDriver(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s): the C log driver cannot be built here, so it is not compared with the Go one", cc)
	}
	cDriverOnce.Do(func() {
		if cDriverDir, cDriverErr = os.MkdirTemp("", "logdriver-c-"); cDriverErr != nil {
			return
		}
		cDriverBin = filepath.Join(cDriverDir, "podhost-log-driver")
		cmd := exec.Command("scripts/build-log-driver.sh", cDriverBin)
		cmd.Dir = filepath.Join("..", "..", "..")
		cmd.Env = append(os.Environ(), "LOG_DRIVER=c")
		if out, err := cmd.CombinedOutput(); err != nil {
			cDriverErr = fmt.Errorf("build the C driver: %w\n%s", err, out)
		}
	})
	if cDriverErr != nil {
		t.Fatal(cDriverErr)
	}
	return cDriverBin
}

// step is one action of the container: optionally send SIGTERM, write
// data to a stream (0 stdout, 1 stderr), optionally close that stream,
// then optionally wait until the live file holds waitRecords lines (which
// fixes the order of records across the streams).
type step struct {
	stream      int
	data        string
	close       bool
	waitRecords int
	term        bool
}

type confCase struct {
	name     string
	cfg      Config            // Path relative to the run's directory
	argv     []string          // instead of [Command, Args(cfg)]
	pre      map[string]string // files written before the driver starts
	steps    []step
	tz       *string // TZ in the driver's environment (nil: unset)
	keepOpen bool    // never close the pipes (the drain must time out)
	wantCode int
}

// outcome is what a run leaves: exit status, whether it said anything on
// stderr, and every file and directory ("mode\ncontent", content with the
// timestamps normalised to "TS" + their zone suffix).
type outcome struct {
	Code   int
	Stderr bool
	Files  map[string]string
}

func (o outcome) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d, stderr %v\n", o.Code, o.Stderr)
	names := make([]string, 0, len(o.Files))
	for n := range o.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := o.Files[n]
		if len(c) > 600 {
			c = c[:300] + fmt.Sprintf("...(%d bytes)...", len(c)-600) + c[len(c)-300:]
		}
		fmt.Fprintf(&b, "== %s: %s\n", n, c)
	}
	return b.String()
}

// runDriver runs bin on c in a fresh directory, as the shim would.
func runDriver(t *testing.T, bin string, c confCase) outcome {
	t.Helper()
	dir := t.TempDir()
	for name, data := range c.pre {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if c.cfg.Path == "" {
		c.cfg.Path = confLog
	}
	argv := []string{Command, Args(Config{Path: filepath.Join(dir, c.cfg.Path), MaxSize: c.cfg.MaxSize, MaxFiles: c.cfg.MaxFiles})[Command]}
	if c.argv != nil {
		argv = nil
		for _, a := range c.argv {
			argv = append(argv, strings.ReplaceAll(a, "{dir}", dir))
		}
	}
	cmd := exec.Command(bin, argv...)
	cmd.Env = []string{"CONTAINER_ID=0123", "CONTAINER_NAMESPACE=podhost", driverEnv}
	if c.tz != nil {
		cmd.Env = append(cmd.Env, "TZ="+*c.tz)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code := feed(t, cmd, c, filepath.Join(dir, c.cfg.Path))
	if testing.Verbose() && stderr.Len() > 0 {
		t.Logf("%s stderr: %s", filepath.Base(bin), bytes.TrimSpace(stderr.Bytes()))
	}
	return outcome{Code: code, Stderr: stderr.Len() > 0, Files: collect(t, dir)}
}

// feed starts cmd with fds 3/4/5, waits for ready, plays the steps and
// returns the exit status.
func feed(t *testing.T, cmd *exec.Cmd, c confCase, live string) int {
	t.Helper()
	outR, outW := mustPipe(t)
	errR, errW := mustPipe(t)
	readyR, readyW := mustPipe(t)
	cmd.ExtraFiles = []*os.File{outR, errR, readyW}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outR.Close()
	errR.Close()
	readyW.Close()
	_ = readyR.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := readyR.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("ready pipe: want EOF, got %v", err)
	}
	readyR.Close()
	w := [2]*os.File{outW, errW}
	for _, s := range c.steps {
		if s.term {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := w[s.stream].WriteString(s.data); err != nil {
			t.Errorf("write to the driver (it must drain its pipes): %v", err)
		}
		if s.close {
			w[s.stream].Close()
		}
		if s.waitRecords > 0 {
			waitRecords(t, live, s.waitRecords)
		}
	}
	if !c.keepOpen {
		outW.Close()
		errW.Close()
	}
	code := wait(t, cmd)
	outW.Close()
	errW.Close()
	return code
}

func wait(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		t.Logf("killed: %v", <-done)
		t.Fatalf("%s did not exit", cmd.Path)
		return -1
	}
}

func mustPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

func waitRecords(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if bytes.Count(data, []byte{'\n'}) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d records, want %d", path, bytes.Count(data, []byte{'\n'}), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// collect reads every file and directory under dir; the log files of one
// path are checked oldest first (<p>.N .. <p>.1, <p>) for their timestamps.
func collect(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	var logs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = info.Mode().String()
		if info.Mode().IsRegular() {
			logs = append(logs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(logs, func(i, j int) bool { return rotationOrder(logs[i]) > rotationOrder(logs[j]) })
	var last time.Time
	for _, rel := range logs {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		files[rel] += "\n" + normalise(t, rel, data, &last)
	}
	return files
}

// rotationOrder is n for <p>.n, 0 for the live file.
func rotationOrder(name string) int {
	if n, err := strconv.Atoi(name[strings.LastIndexByte(name, '.')+1:]); err == nil {
		return n
	}
	return 0
}

// normalise replaces each record's time by "TS" and keeps its zone, after
// checking that it parses, has the fixed-width layout and does not go back.
func normalise(t *testing.T, name string, data []byte, last *time.Time) string {
	t.Helper()
	var b strings.Builder
	for i, line := range strings.SplitAfter(string(data), "\n") {
		ts, rest, ok := strings.Cut(line, " ")
		if !ok {
			b.WriteString(line)
			continue
		}
		tm, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || tm.Format(TimeFormat) != ts {
			t.Errorf("%s line %d: timestamp %q: not TimeFormat (%v)", name, i+1, ts, err)
			b.WriteString(line)
			continue
		}
		if tm.Before(*last) {
			t.Errorf("%s line %d: time %s before %s", name, i+1, tm, *last)
		}
		*last = tm
		b.WriteString("TS" + ts[29:] + " " + rest)
	}
	return b.String()
}
