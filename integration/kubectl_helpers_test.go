//go:build integration

package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/testenv"
)

// kubectlBin is the kubectl on the machine's PATH, or a skip.
func kubectlBin(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl is not on the PATH (%v): the kube API suite drives the real kubectl", err)
	}
	return p
}

// enableKubeAPI serves the kube API on a free loopback port; call before
// start, then useKubectl once the daemon runs.
func (d *podhostd) enableKubeAPI() {
	d.t.Helper()
	d.kubeAddr = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(d.t))
	b, err := os.ReadFile(d.configPath)
	if err != nil {
		d.t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`kubeAPIAddress: ""`), []byte("kubeAPIAddress: "+d.kubeAddr), 1)
	if err := os.WriteFile(d.configPath, b, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// useKubectl writes the kubeconfig `podhost kubeconfig` prints for the
// running daemon, which d.kubectl then uses.
func (d *podhostd) useKubectl() {
	d.t.Helper()
	kubectlBin(d.t)
	out, err := exec.Command(env.PodhostBin, "--config", d.configPath, "kubeconfig", "--state-dir", d.stateDir).Output()
	if err != nil {
		d.t.Fatalf("podhost kubeconfig: %v", err)
	}
	d.kubeconfig = filepath.Join(d.dir, "kubeconfig")
	if err := os.WriteFile(d.kubeconfig, out, 0o600); err != nil {
		d.t.Fatal(err)
	}
}

// kubectl runs the real kubectl against the daemon with stdin (may be
// empty) and returns its output and exit code.
func (d *podhostd) kubectl(stdin string, args ...string) (stdout, stderr string, code int) {
	d.t.Helper()
	cmd := exec.Command(kubectlBin(d.t), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		d.t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// mustKubectl is kubectl that must succeed.
func (d *podhostd) mustKubectl(args ...string) string {
	d.t.Helper()
	out, errOut, code := d.kubectl("", args...)
	if code != 0 {
		d.t.Fatalf("kubectl %s: exit %d\n%s%s\n%s", strings.Join(args, " "), code, out, errOut, d.logs())
	}
	return out
}

// waitKubectl runs kubectl until cond holds for its output.
func (d *podhostd) waitKubectl(timeout time.Duration, what string, cond func(string) bool, args ...string) string {
	d.t.Helper()
	var out, errOut string
	if err := waitFor(timeout, func() (bool, error) {
		out, errOut, _ = d.kubectl("", args...)
		return cond(out), nil
	}); err != nil {
		d.t.Fatalf("kubectl %s: %s not seen\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), what, out, errOut)
	}
	return out
}
