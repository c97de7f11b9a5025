package main

import (
	"strings"
	"testing"
)

// TestCpUsage: argument mistakes are usage errors and a missing local
// source is refused, all before podhost talks to the daemon.
func TestCpUsage(t *testing.T) {
	e := newTestEnv(t)
	f := e.input(t, "f", []byte("x"))
	const help = "See 'podhost cp --help' for usage.\n"
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"cp", "f"}, "Error: source and destination are required\n" + help},
		{[]string{"cp", "a", "b", "c"}, "Error: source and destination are required\n" + help},
		{[]string{"cp", "web:/a", "db:/b"}, "Error: one of src or dest must be a local file specification\n" + help},
		{[]string{"cp", "a", "b"}, "Error: one of src or dest must be a remote file specification\n" + help},
		{[]string{"cp", "a/b/web:/x", "y"}, "Error: filespec must match the canonical format: [[namespace/]pod:]file/path\n" + help},
		{[]string{"cp", "/no/such/file", "web:/x"}, "Error: /no/such/file doesn't exist in local filesystem\n"},
		{[]string{"cp", "-n", "..", f, "web:/x"}, "Error: invalid namespace \"..\": "},
		{[]string{"cp", f, "../web:/x"}, "Error: invalid namespace \"..\": "},
	} {
		code, stdout, stderr := e.podhost(t, "", append([]string{"--socket", "/nonexistent.sock"}, tc.args...)...)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, tc.stderr) {
			t.Errorf("podhost %q: code %d, stdout %q, stderr %q; want 1, \"\", %q", tc.args, code, stdout, stderr, tc.stderr)
		}
	}
}
