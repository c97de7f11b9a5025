package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJoinRunsTheClusterAgent: podhost join runs podhost-cluster join (on
// PATH here: none is beside the test binary) with the flags given,
// repeated ones repeated, and the global --config; its exit code is
// podhost's and its output the only output. Without podhost-cluster: one
// line saying so, exit 1.
func TestJoinRunsTheClusterAgent(t *testing.T) {
	e := newTestEnv(t)
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	code, _, stderr := e.podhost(t, "", "join", "--kubeconfig", "/k")
	if code != 1 || !strings.Contains(stderr, "podhost-cluster is not installed") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("without podhost-cluster: exit %d, stderr %q", code, stderr)
	}
	args := filepath.Join(bin, "args")
	script := "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done > " + args + "\necho 'podhost-cluster join: no' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "podhost-cluster"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := e.podhost(t, "", "join", "--server", "https://a:6443", "--token", "abcdef.0123456789abcdef",
		"--ca-cert-hash", "sha256:1", "--ca-cert-hash", "sha256:2", "--start=false")
	if code != 1 || stdout != "" || stderr != "podhost-cluster join: no\n" {
		t.Errorf("exit %d, stdout %q, stderr %q: want the agent's exit code and line only", code, stdout, stderr)
	}
	got, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	want := "join\n--config=" + e.config + "\n--ca-cert-hash=sha256:1\n--ca-cert-hash=sha256:2\n--server=https://a:6443\n--start=false\n--token=abcdef.0123456789abcdef\n"
	if string(got) != want {
		t.Errorf("podhost-cluster got:\n%s\nwant:\n%s", got, want)
	}
}
