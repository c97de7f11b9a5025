package logs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/logs/driver"
)

func TestParsePodDir(t *testing.T) {
	for _, tc := range []struct {
		in            string
		ns, name, uid string
		ok            bool
	}{
		{"default_web_u1", "default", "web", "u1", true},
		{"kube-system_a.b_0f-1", "kube-system", "a.b", "0f-1", true},
		{"default_web", "", "", "", false},
		{"default_web_u1_x", "", "", "", false},
		{"_web_u1", "", "", "", false},
		{"default__u1", "", "", "", false},
		{"default_web_", "", "", "", false},
		{"lost+found", "", "", "", false},
	} {
		ns, name, uid, ok := ParsePodDir(tc.in)
		if ns != tc.ns || name != tc.name || uid != tc.uid || ok != tc.ok {
			t.Errorf("ParsePodDir(%q) = %q %q %q %v", tc.in, ns, name, uid, ok)
		}
	}
}

func TestRemovalTargets(t *testing.T) {
	two := []podDir{{Path: "/l/ns_a_u", Containers: []string{"app", "init", "side"}}, {Path: "/l/ns_b_u", Containers: []string{"app"}}}
	for _, tc := range []struct {
		name string
		dirs []podDir
		keep map[string]bool
		want []string
	}{
		{"nothing there", nil, nil, nil},
		{"no container kept: whole dirs", two, nil, []string{"/l/ns_a_u", "/l/ns_b_u"}},
		{"empty keep: whole dirs", two, map[string]bool{}, []string{"/l/ns_a_u", "/l/ns_b_u"}},
		{"kept containers stay", two, map[string]bool{"app": true}, []string{"/l/ns_a_u/init", "/l/ns_a_u/side"}},
		{"every container kept", two, map[string]bool{"app": true, "init": true, "side": true}, nil},
	} {
		if got := removalTargets(tc.dirs, tc.keep); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDriverPath(t *testing.T) {
	argv := func(args ...string) []byte { return []byte(strings.Join(args, "\x00") + "\x00") }
	cfg := driver.Args(driver.Config{Path: "/var/log/pods/ns_web_u/app/0.log", MaxSize: 10, MaxFiles: 1})[DriverCommand]
	for _, tc := range []struct {
		name    string
		cmdline []byte
		want    string
		ok      bool
	}{
		{"C driver", argv("/usr/bin/podhost-log-driver", DriverCommand, cfg), "/var/log/pods/ns_web_u/app/0.log", true},
		{"podhost fallback", argv("/usr/bin/podhost", DriverCommand, cfg), "/var/log/pods/ns_web_u/app/0.log", true},
		{"no trailing NUL", []byte("podhost-log-driver\x00" + DriverCommand + "\x00" + cfg), "/var/log/pods/ns_web_u/app/0.log", true},
		{"another command", argv("/usr/bin/podhost", "daemon", cfg), "", false},
		{"extra argument", argv("podhost-log-driver", DriverCommand, cfg, "x"), "", false},
		{"unparsable config", argv("podhost-log-driver", DriverCommand, "path=%zz"), "", false},
		{"kernel thread", nil, "", false},
	} {
		got, ok := driverPath(tc.cmdline)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/l/ns_a_u/app/0.log", "/l/ns_a_u", true},
		{"/l/ns_a_u/app/0.log", "/l/ns_a_u/", true},
		{"/l/ns_a_u/app/0.log", "/l/ns_a_u/app", true},
		{"/l/ns_a_u", "/l/ns_a_u", true},
		{"/l/ns_a_u2/app/0.log", "/l/ns_a_u", false},
		{"/l/ns_a_u/application/0.log", "/l/ns_a_u/app", false},
	} {
		if got := within(tc.path, tc.dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v", tc.path, tc.dir, got)
		}
	}
}

// fakeProc writes <root>/<pid>/cmdline and comm (argv[0]'s, as exec sets
// it) for each process.
func fakeProc(t *testing.T, procs map[string][]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, argv := range procs {
		mustMkdir(t, filepath.Join(root, pid))
		mustWrite(t, filepath.Join(root, pid, "cmdline"), strings.Join(argv, "\x00")+"\x00")
		mustWrite(t, filepath.Join(root, pid, "comm"), DriverComms(argv[0])[0]+"\n")
	}
	mustMkdir(t, filepath.Join(root, "self")) // not a pid: skipped
	return root
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// logTree makes a log dir with pods u1 (containers app, init) and u2.
func logTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "default_web_u1", "app", "0.log"), "a\n")
	mustWrite(t, filepath.Join(root, "default_web_u1", "init", "0.log"), "i\n")
	mustWrite(t, filepath.Join(root, "default_db_u2", "app", "0.log"), "d\n")
	mustWrite(t, filepath.Join(root, "default_web_u1.txt"), "a file, not a pod dir\n")
	return root
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func TestRemovePod(t *testing.T) {
	ctx := context.Background()
	root := logTree(t)
	r := Remover{Root: root, ProcRoot: fakeProc(t, map[string][]string{"1": {"/sbin/init"}})}
	if n, err := r.RemovePod(ctx, "u1", map[string]bool{"app": true}); err != nil || n != 1 {
		t.Fatalf("removed %d, %v", n, err)
	}
	if !exists(filepath.Join(root, "default_web_u1", "app", "0.log")) || exists(filepath.Join(root, "default_web_u1", "init")) {
		t.Fatal("keep: want app's logs kept and init's removed")
	}
	if n, err := r.RemovePod(ctx, "u1", nil); err != nil || n != 1 {
		t.Fatalf("removed %d, %v", n, err)
	}
	if exists(filepath.Join(root, "default_web_u1")) || !exists(filepath.Join(root, "default_db_u2", "app", "0.log")) {
		t.Fatal("want u1's dir removed, u2's kept")
	}
	if n, err := r.RemovePod(ctx, "u1", nil); err != nil || n != 0 {
		t.Fatalf("again: removed %d, %v", n, err)
	}
	if _, err := (Remover{Root: filepath.Join(root, "missing")}).RemovePod(ctx, "u1", nil); err != nil {
		t.Fatalf("missing log dir: %v", err)
	}
}

// RemovePods removes the pods whose logs no driver writes, and names the
// driver of the others.
func TestRemovePods(t *testing.T) {
	root := logTree(t)
	arg := driver.Args(driver.Config{Path: filepath.Join(root, "default_db_u2", "app", "0.log")})[DriverCommand]
	r := Remover{Root: root, ProcRoot: fakeProc(t, map[string][]string{"7": {"/usr/bin/podhost-log-driver", DriverCommand, arg}})}
	got := r.RemovePods(context.Background(), []types.UID{"u1", "u2", "absent"})
	if got["u1"].Removed != 1 || got["u1"].Err != nil || exists(filepath.Join(root, "default_web_u1")) {
		t.Fatalf("u1: %+v", got["u1"])
	}
	if !errors.Is(got["u2"].Err, ErrDriverWriting) || !exists(filepath.Join(root, "default_db_u2")) {
		t.Fatalf("u2: %+v", got["u2"])
	}
	if got["absent"] != (Removal{}) {
		t.Fatalf("absent: %+v", got["absent"])
	}
}

// Only processes named as a log driver are asked for their argv: a driver's
// argv under another name is not one; the
// configured driver's name counts. A cancelled scan stops.
func TestDriversWritingLooksAtCommFirst(t *testing.T) {
	dir := "/var/log/pods/ns_web_u"
	arg := driver.Args(driver.Config{Path: dir + "/app/0.log"})[DriverCommand]
	proc := fakeProc(t, map[string][]string{
		"10": {"/opt/bin/other", DriverCommand, arg},
		"11": {"/opt/bin/my-driver", DriverCommand, arg},
		"12": {"/usr/local/bin/podhost", DriverCommand, arg},
	})
	ctx := context.Background()
	got, err := driversWriting(ctx, proc, DriverComms(append(DefaultDrivers, "/opt/bin/my-driver")...), []string{dir})
	pids := []int{}
	for _, d := range got {
		pids = append(pids, d.PID)
	}
	slices.Sort(pids)
	if err != nil || !slices.Equal(pids, []int{11, 12}) {
		t.Fatalf("drivers %v, %v; want 11 and 12", pids, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := driversWriting(cancelled, proc, DriverComms(DefaultDrivers...), []string{dir}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled scan: %v", err)
	}
}

func TestDriverComms(t *testing.T) {
	got := DriverComms("/usr/local/bin/podhost-log-driver", "", "podhost", "/x/podhost-log-driver-v2")
	if !slices.Equal(got, []string{"podhost-log-dri", "podhost"}) {
		t.Fatalf("DriverComms = %v", got)
	}
}

// A file of the pod that a log driver still writes keeps the whole removal
// back; a driver writing elsewhere does not.
func TestRemovePodWaitsForItsDrivers(t *testing.T) {
	ctx := context.Background()
	root := logTree(t)
	arg := func(p string) string { return driver.Args(driver.Config{Path: p})[DriverCommand] }
	busy := filepath.Join(root, "default_web_u1", "init", "0.log")
	proc := fakeProc(t, map[string][]string{
		"40": {"podhost-log-driver", DriverCommand, arg(filepath.Join(root, "default_db_u2", "app", "0.log"))},
		"41": {"podhost-log-driver", DriverCommand, arg(busy)},
	})
	r := Remover{Root: root, ProcRoot: proc}
	_, err := r.RemovePod(ctx, "u1", nil)
	if !errors.Is(err, ErrDriverWriting) || !strings.Contains(err.Error(), "pid 41") || !strings.Contains(err.Error(), busy) {
		t.Fatalf("err = %v, want the driver named", err)
	}
	if !exists(filepath.Join(root, "default_web_u1", "app", "0.log")) {
		t.Fatal("removed while a driver writes there")
	}
	if _, err := r.RemovePod(ctx, "u1", map[string]bool{"init": true}); err != nil {
		t.Fatalf("init kept, its driver does not matter: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(proc, "41")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemovePod(ctx, "u1", nil); err != nil || exists(filepath.Join(root, "default_web_u1")) {
		t.Fatalf("after the driver exited: %v", err)
	}
}
