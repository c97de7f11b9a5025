package statedir

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// Secure makes a missing state dir 0750, and tightens an existing open one
// and the pod dirs below it, saying so in the log; a tight dir (0700)
// stays as it is, and so do the volumes' own dirs (an emptyDir's 0777).
func TestSecure(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	fresh := filepath.Join(t.TempDir(), "a", "state")
	if err := Secure(fresh, log); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{fresh, PodsDir(fresh)} {
		if m := mode(t, d); m != Mode {
			t.Errorf("%s: mode %04o, want %04o", d, m, Mode)
		}
	}
	if logs.Len() != 0 {
		t.Errorf("a fresh dir was logged as tightened: %s", logs.String())
	}

	open := t.TempDir()
	pod := filepath.Join(PodsDir(open), "uid1")
	empty := filepath.Join(pod, "volumes", "empty-dir", "scratch")
	if err := os.MkdirAll(empty, 0o777); err != nil {
		t.Fatal(err)
	}
	for d, m := range map[string]os.FileMode{open: 0o777, PodsDir(open): 0o755, pod: 0o700,
		filepath.Join(pod, "volumes"): 0o775, empty: 0o777} {
		if err := os.Chmod(d, m); err != nil {
			t.Fatal(err)
		}
	}
	problems, err := Audit(open, os.Getuid())
	if err != nil || len(problems) != 3 {
		t.Fatalf("Audit: %v %v, want the state dir, pods and volumes", problems, err)
	}
	if err := Secure(open, log); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]os.FileMode{open: 0o750, PodsDir(open): 0o750, pod: 0o700,
		filepath.Join(pod, "volumes"): 0o750, empty: 0o777} {
		if m := mode(t, d); m != want {
			t.Errorf("%s: mode %04o, want %04o", d, m, want)
		}
	}
	if n := strings.Count(logs.String(), "tightened"); n != 3 {
		t.Errorf("%d tightened lines, want 3:\n%s", n, logs.String())
	}
	if problems, err := Audit(open, os.Getuid()); err != nil || len(problems) != 0 {
		t.Errorf("Audit after Secure: %v %v", problems, err)
	}
	// Another owner is a problem Secure does not change (logged).
	if problems, _ := Audit(open, os.Getuid()+1); len(problems) == 0 || !strings.Contains(problems[0].String(), "owned by uid") {
		t.Errorf("Audit for another uid: %v", problems)
	}
}
