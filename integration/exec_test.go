//go:build integration

package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// execCLI runs `podhost exec args...` against d with stdin and returns its
// stdout, stderr and exit code.
func (d *podhostd) execCLI(stdin string, args ...string) (stdout, stderr string, code int) {
	d.t.Helper()
	all := append([]string{"--config", d.configPath, "--socket", d.socket, "exec"}, args...)
	cmd := exec.Command(env.PodhostBin, all...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		d.t.Fatalf("podhost exec %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// TestExec runs commands in running containers with `podhost exec`:
// output, exit codes, stdin, a TTY, container selection, and the errors for
// an ambiguous container and a stopped one.
func TestExec(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("web.yaml", sleeper("web", 1, ""))
	d.writeManifest("duo.yaml", podManifest("duo", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  restartPolicy: OnFailure
  containers:
  - name: one
    image: %[1]s
    command: ["sh", "-c", "echo one > /name; exec sleep 3600"]
  - name: two
    image: %[1]s
    command: ["sh", "-c", "echo two > /name; exec sleep 3600"]
  - name: done
    image: %[1]s
    command: ["true"]
`, env.ImageRef)))
	d.waitRunning("web")
	d.waitPod("duo", 60*time.Second, "one and two running, done terminated", func(p *corev1.Pod) bool {
		states := map[string]corev1.ContainerState{}
		for _, cs := range p.Status.ContainerStatuses {
			states[cs.Name] = cs.State
		}
		return states["one"].Running != nil && states["two"].Running != nil && states["done"].Terminated != nil
	})

	for _, tc := range []struct {
		stdin          string
		args           []string
		stdout, stderr string
		code           int
	}{
		{args: []string{"web", "--", "echo", "hi"}, stdout: "hi\n"},
		{args: []string{"web", "--", "sh", "-c", "echo out; echo err >&2; exit 3"}, stdout: "out\n",
			stderr: "err\ncommand terminated with exit code 3\n", code: 3},
		{stdin: "abc", args: []string{"-i", "web", "--", "cat"}, stdout: "abc"},
		{stdin: "abc\n", args: []string{"-n", "default", "-i", "web", "--", "sh", "-c", "read x; echo got $x"}, stdout: "got abc\n"},
		{args: []string{"-t", "web", "--", "sh", "-c", "test -t 1 && echo tty; echo err >&2"}, stdout: "tty\r\nerr\r\n"},
		{args: []string{"web", "--", "sh", "-c", "test -t 1 || echo notty"}, stdout: "notty\n"},
		{args: []string{"-c", "two", "duo", "--", "cat", "/name"}, stdout: "two\n"},
		{args: []string{"duo", "-c", "one", "--", "cat", "/name"}, stdout: "one\n"},
		{args: []string{"duo", "--", "cat", "/name"}, stdout: "one\n",
			stderr: "Defaulted container \"one\" out of: one, two, done\n"},
		{args: []string{"duo", "-c", "done", "--", "true"}, code: 1,
			stderr: "Error: container done is not running (state: terminated: Completed, exit code 0)\n"},
		{args: []string{"duo", "-c", "nope", "--", "true"}, code: 1, stderr: "Error: container nope is not valid for pod duo"},
		{args: []string{"nope", "--", "true"}, code: 1, stderr: "Error from server (NotFound): pods \"nope\" not found\n"},
		{args: []string{"web", "--", "/no/such/binary"}, code: 1, stderr: "Error: "},
	} {
		stdout, stderr, code := d.execCLI(tc.stdin, tc.args...)
		if stdout != tc.stdout || code != tc.code || !strings.HasPrefix(stderr, tc.stderr) || (tc.stderr == "" && stderr != "") {
			t.Errorf("podhost exec %q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q",
				tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestExecInterrupt: ^C on `podhost exec` (SIGINT) ends the CLI, and the
// daemon kills the command in the container.
func TestExecInterrupt(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("web.yaml", sleeper("web", 1, ""))
	d.waitRunning("web")
	cmd := exec.Command(env.PodhostBin, "--config", d.configPath, "--socket", d.socket,
		"exec", "web", "--", "sh", "-c", "echo started; exec sleep 1234")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, len("started\n"))
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "started\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("exec output %q, %v", line, err)
	}
	running := func() bool {
		out, _, _ := d.execCLI("", "web", "--", "ps")
		return strings.Contains(out, "sleep 1234")
	}
	if !running() {
		t.Fatal("sleep 1234 not in ps")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(stderr.String(), "interrupted") {
			t.Errorf("interrupted exec: %v, stderr %q", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("podhost exec did not end on SIGINT")
	}
	if err := waitFor(10*time.Second, func() (bool, error) { return !running(), nil }); err != nil {
		t.Fatal("the exec'd process still runs after the CLI was interrupted")
	}
}
