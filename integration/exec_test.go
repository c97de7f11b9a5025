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
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
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
		// -t without -i: no TTY; -it with stdin not a terminal: kubectl's
		// warning, no TTY, the input delivered (a forced TTY lost it).
		{args: []string{"-t", "web", "--", "sh", "-c", "test -t 1 || echo notty"}, stdout: "notty\n"},
		{stdin: "piped\n", args: []string{"-it", "web", "--", "sh", "-c", "test -t 0 || cat"}, stdout: "piped\n",
			stderr: "Unable to use a TTY - input is not a terminal or the right kind of file\n"},
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

// TestExecTerminal: `podhost exec -it` on a terminal gives the command a
// terminal of that size from the start (stty size is not 0 0), TERM=xterm,
// and follows its resizes (the terminal's SIGWINCH to podhost), as kubectl
// exec does.
func TestExecTerminal(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("web.yaml", sleeper("web", 1, ""))
	d.waitRunning("web")
	master, slave := clienttest.OpenPTY(t, 100, 30)
	script := `stty size; echo "term=$TERM"; while [ "$(stty size)" = "30 100" ]; do sleep 0.1; done; stty size`
	cmd := exec.Command(env.PodhostBin, "--config", d.configPath, "--socket", d.socket, "exec", "-it", "web", "--", "sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true} // the terminal's foreground process: SIGWINCH
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	out := &syncWriter{w: &bytes.Buffer{}}
	go func() { _, _ = io.Copy(out, master) }()
	waitOutput := func(what, want string) {
		t.Helper()
		if err := waitFor(30*time.Second, func() (bool, error) {
			return strings.Contains(strings.ReplaceAll(out.String(), "\r", ""), want), nil
		}); err != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("%s: no %q in the terminal's output %q", what, want, out.String())
		}
	}
	waitOutput("the size from the start, TERM", "30 100\nterm=xterm\n")
	clienttest.SetPTYSize(t, master, 120, 40)
	waitOutput("the resize", "term=xterm\n40 120\n")
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("podhost exec -it: %v; output %q", err, out.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("podhost exec -it did not end; output %q", out.String())
	}
}
