//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// markedPod is a pod whose container carries MARK=mark in its environment:
// which file's spec runs is read from the host's /proc.
func markedPod(name, mark string) string {
	return podManifest(name, `  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sleep", "3600"]
    env: [{name: MARK, value: "`+mark+`"}]
`)
}

// namedTasks returns the containerd ID → host PID of every running
// container of pod default/name.
func namedTasks(t *testing.T, name string) map[string]uint32 {
	t.Helper()
	ctx := env.Context(context.Background())
	cs, err := env.Client().Containers(ctx, fmt.Sprintf("labels.%q==%s", wellknown.LabelPodName, name))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint32{}
	for _, c := range cs {
		task, err := c.Task(ctx, nil)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if st, err := task.Status(ctx); err == nil && st.Status == "running" {
			out[c.ID()] = task.Pid()
		}
	}
	return out
}

// hostMarks returns the MARK of every running container of pod
// default/name, read from the process's environment on the host.
func hostMarks(t *testing.T, name string) []string {
	t.Helper()
	var marks []string
	for _, pid := range namedTasks(t, name) {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue // exited meanwhile
		}
		for _, kv := range strings.Split(string(raw), "\x00") {
			if v, ok := strings.CutPrefix(kv, "MARK="); ok {
				marks = append(marks, v)
			}
		}
	}
	return marks
}

// waitMark waits until exactly one container of the pod runs, with mark.
func waitMark(t *testing.T, d *podhostd, name, mark string) {
	t.Helper()
	var last []string
	if err := waitFor(90*time.Second, func() (bool, error) {
		last = hostMarks(t, name)
		return len(last) == 1 && last[0] == mark, nil
	}); err != nil {
		t.Fatalf("pod %s: host runs %q, want only %q\n%s", name, last, mark, d.logs())
	}
}

// barrier makes sure the daemon read the dir as it is now: a ConfigMap
// file written after the others is listed once a scan saw it (a scan reads
// every file).
func barrier(t *testing.T, d *podhostd, n *int) {
	t.Helper()
	*n++
	name := fmt.Sprintf("barrier%d", *n)
	d.writeManifest(name+".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+"}\ndata: {k: v}\n")
	if err := waitFor(60*time.Second, func() (bool, error) {
		out, err := d.cli("get", "configmaps")
		return strings.Contains(out, name), err
	}); err != nil {
		t.Fatalf("barrier %s not seen: %v", name, err)
	}
	d.removeManifest(name + ".yaml")
}

// waitWarning waits until `get pods` warns with a line holding want.
func waitWarning(t *testing.T, d *podhostd, want string) {
	t.Helper()
	var out string
	if err := waitFor(60*time.Second, func() (bool, error) {
		var err error
		out, err = d.cli("get", "pods")
		return strings.Contains(out, want), err
	}); err != nil {
		t.Fatalf("get pods never warned %q: %v\n%s", want, err, out)
	}
}

// TestManifestOwnership: a pod declared by two files is owned by the file
// the daemon saw first — a backup copy added after the original does not
// take it over (though it sorts first), nor does a restart switch it —
// and the other file's declaration is an error naming both; edits of the
// owner apply, edits of the copy do not; apply and delete refuse naming
// both files and change nothing; once the copy is gone, delete deletes.
// A copy that was there first owns the pod, and the original added after
// it is the refused one until the copy goes. The host is checked: which
// container runs, with which spec.
func TestManifestOwnership(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	n := 0

	t.Run("backup added after the original", func(t *testing.T) {
		d.writeManifest("own.yaml", markedPod("own", "orig"))
		waitMark(t, d, "own", "orig")
		d.writeManifest("own-backup.yaml", markedPod("own", "backup"))
		waitWarning(t, d, "own-backup.yaml: duplicate pod default/own, already defined in own.yaml")
		waitMark(t, d, "own", "orig")

		d.writeManifest("own.yaml", markedPod("own", "orig2"))
		waitMark(t, d, "own", "orig2")
		d.writeManifest("own-backup.yaml", markedPod("own", "backup2"))
		barrier(t, d, &n)
		waitMark(t, d, "own", "orig2")

		d.kill(syscall.SIGTERM)
		d.start()
		barrier(t, d, &n)
		waitMark(t, d, "own", "orig2")
		waitWarning(t, d, "own-backup.yaml: duplicate pod default/own, already defined in own.yaml")

		edited := filepath.Join(t.TempDir(), "own.yaml")
		if err := os.WriteFile(edited, []byte(markedPod("own", "applied")), 0o644); err != nil {
			t.Fatal(err)
		}
		both := "pod default/own is declared by two files of the manifest dir, " +
			filepath.Join(d.manifestDir, "own-backup.yaml") + " and " + filepath.Join(d.manifestDir, "own.yaml")
		for _, args := range [][]string{{"apply", "-f", edited}, {"delete", "own"}} {
			out, err := d.cli(args...)
			if err == nil || !strings.Contains(out, both) || strings.Contains(out, "deleted") || strings.Contains(out, "configured") {
				t.Fatalf("podhost %s: %v\n%s\nwant a refusal naming both files", strings.Join(args, " "), err, out)
			}
		}
		for file, mark := range map[string]string{"own.yaml": "orig2", "own-backup.yaml": "backup2"} {
			if b, _ := os.ReadFile(filepath.Join(d.manifestDir, file)); string(b) != markedPod("own", mark) {
				t.Fatalf("a refused command changed %s:\n%s", file, b)
			}
		}
		barrier(t, d, &n)
		waitMark(t, d, "own", "orig2")

		d.removeManifest("own-backup.yaml")
		if out := d.mustCLI("delete", "own"); !strings.Contains(out, `pod "own" deleted`) {
			t.Fatalf("delete: %s", out)
		}
		if marks := hostMarks(t, "own"); len(marks) != 0 {
			t.Fatalf("delete returned, the host still runs %q", marks)
		}
		if entries, _ := os.ReadDir(d.manifestDir); len(entries) != 0 {
			t.Fatalf("manifest dir after delete: %v", entries)
		}
	})

	t.Run("backup there before the original", func(t *testing.T) {
		d.writeManifest("cpy-backup.yaml", markedPod("cpy", "backup"))
		waitMark(t, d, "cpy", "backup")
		d.writeManifest("cpy.yaml", markedPod("cpy", "orig"))
		waitWarning(t, d, "cpy.yaml: duplicate pod default/cpy, already defined in cpy-backup.yaml")
		barrier(t, d, &n)
		waitMark(t, d, "cpy", "backup")

		d.writeManifest("cpy-backup.yaml", markedPod("cpy", "backup2"))
		waitMark(t, d, "cpy", "backup2")
		d.writeManifest("cpy.yaml", markedPod("cpy", "orig2"))
		barrier(t, d, &n)
		waitMark(t, d, "cpy", "backup2")

		d.removeManifest("cpy-backup.yaml")
		waitMark(t, d, "cpy", "orig2")
		if out := d.mustCLI("get", "pods"); strings.Contains(out, "duplicate") {
			t.Fatalf("duplicate warning after the copy is gone:\n%s", out)
		}
	})
}
