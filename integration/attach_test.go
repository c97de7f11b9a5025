//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/clients/clienttest"
)

// attachSession is one `kubectl attach -it` on a terminal of its own.
type attachSession struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File
	out    *syncWriter
	done   chan error
	once   sync.Once
}

// kubectlAttach runs `kubectl attach -it pod -c container` on a new
// 100x30 terminal and waits until it is attached (kubectl's prompt hint).
func (d *podhostd) kubectlAttach(t *testing.T, pod, container string) *attachSession {
	t.Helper()
	master, slave := clienttest.OpenPTY(t, 100, 30)
	cmd := exec.Command(kubectlBin(t), "attach", "-it", pod, "-c", container)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &attachSession{t: t, cmd: cmd, master: master, out: &syncWriter{w: &bytes.Buffer{}}, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	go func() { _, _ = io.Copy(s.out, master) }()
	t.Cleanup(s.detach)
	s.waitOutput("attached", "If you don't see a command prompt, try pressing enter.")
	return s
}

// waitOutput waits until the terminal showed want.
func (s *attachSession) waitOutput(what, want string) {
	s.t.Helper()
	if err := waitFor(60*time.Second, func() (bool, error) {
		return strings.Contains(strings.ReplaceAll(s.out.String(), "\r", ""), want), nil
	}); err != nil {
		s.t.Fatalf("kubectl attach: %s: no %q in the terminal's output %q", what, want, s.out.String())
	}
}

// typeLine types line and Enter on the terminal.
func (s *attachSession) typeLine(line string) {
	s.t.Helper()
	if _, err := s.master.WriteString(line + "\r"); err != nil {
		s.t.Fatal(err)
	}
}

// detach ends kubectl as a closed terminal does (its connection goes).
func (s *attachSession) detach() {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			s.t.Errorf("kubectl attach did not end when killed")
		}
	})
}

// TestKubectlAttachStdin: `kubectl attach -it` reaches the stdin of a
// container with stdin and tty (the shell runs what is typed, its output
// comes back, the console has the client's size), and a second attach
// after the first ended reaches the same shell.
func TestKubectlAttachStdin(t *testing.T) {
	d := newPodhostd(t)
	d.enableKubeAPI()
	d.start()
	d.useKubectl()
	d.writeManifest("tty.yaml", podManifest("tty", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - {name: shell, image: %s, command: ["sh"], stdin: true, tty: true}
`, env.ImageRef)))
	d.mustKubectl("wait", "--for=condition=Ready", "pod/tty", "--timeout=120s")
	for i, word := range []string{"first", "second"} {
		a := d.kubectlAttach(t, "tty", "shell")
		// kubectl nudges the size (+1, then back) to make the shell redraw:
		// the shell answers once its console has the client's size.
		a.typeLine(fmt.Sprintf(`until [ "$(stty size)" = "30 100" ]; do sleep 0.1; done; echo %s-$((%d+1)); stty size`, word, i))
		a.waitOutput(word+" attach: the shell's answer", fmt.Sprintf("%s-%d\n30 100\n", word, i+1))
		a.detach()
	}
	if cs := containerStatus(d.pod("tty"), "shell"); cs == nil || cs.State.Running == nil || cs.RestartCount != 0 {
		t.Fatalf("the shell did not outlive its attaches: %+v", cs)
	}
}
