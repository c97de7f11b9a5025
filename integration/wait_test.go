//go:build integration

package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// podhostWait starts `podhost wait args...` against d; done gets its stdout,
// stderr and error when it ends.
func (d *podhostd) podhostWait(args ...string) <-chan [3]any {
	all := append([]string{"--config", d.configPath, "--socket", d.socket, "wait"}, args...)
	cmd := exec.Command(env.PodhostBin, all...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan [3]any, 1)
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	go func() { err := cmd.Wait(); done <- [3]any{out.String(), errOut.String(), err} }()
	return done
}

func waitResult(t *testing.T, done <-chan [3]any) (stdout, stderr string, err error) {
	t.Helper()
	select {
	case r := <-done:
		err, _ := r[2].(error)
		return r[0].(string), r[1].(string), err
	case <-time.After(2 * time.Minute):
		t.Fatal("podhost wait did not end")
	}
	return "", "", nil
}

// hostProcess reports whether a process with exactly this command line
// runs on the host.
func hostProcess(cmdline string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		if b, err := os.ReadFile(f); err == nil && string(bytes.TrimRight(b, "\x00")) == cmdline {
			return true
		}
	}
	return false
}

// TestWait runs `podhost wait` as a boot script would: started before the
// daemon (it waits for it), then the conditions kubectl wait offers, its
// errors, and --for=delete, after which the pod's process is gone from
// the host.
func TestWait(t *testing.T) {
	d := newPodhostd(t)
	created := d.podhostWait("--for=create", "pod/web", "--timeout=90s")
	ready := d.podhostWait("--for=condition=Ready", "pod/web", "--timeout=90s")
	d.writeManifest("web.yaml", podManifest("web", `  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sleep", "3601"]
`))
	d.start()
	for name, done := range map[string]<-chan [3]any{"create": created, "condition=Ready": ready} {
		if out, errOut, err := waitResult(t, done); err != nil || out != "pod/web condition met\n" {
			t.Fatalf("wait --for=%s before the daemon: %v, stdout %q, stderr %q", name, err, out, errOut)
		}
	}
	if !hostProcess("sleep\x003601") {
		t.Fatal("condition Ready met, but the container's sleep 3601 does not run on the host")
	}

	for _, tc := range []struct {
		args     []string
		out, err string // err: a line of stderr; "" = exit code 0
	}{
		{[]string{"--for=jsonpath={.status.phase}=Running", "pods", "-l", "app!=none"}, "pod/web condition met\n", ""},
		{[]string{`--for=jsonpath={.status.conditions[?(@.type=="Ready")].status}=True`, "pods", "web"}, "pod/web condition met\n", ""},
		{[]string{"--for=condition=Ready", "pod/nope"}, "", `Error from server (NotFound): pods "nope" not found`},
		{[]string{"--for=condition=Ready", "pods", "-l", "app=nope"}, "", "Error: no matching resources found"},
		{[]string{"--for=jsonpath={.status.phase}=Succeeded", "pod/web", "--timeout=1s"}, "", "Error: timed out waiting for the condition on pods/web"},
		{[]string{"--for=condition=Ready=false", "pod/web", "--timeout=0"}, "", "Error: condition not met for pods/web"},
		{[]string{"--for=delete", "pod/nope"}, "", ""},
	} {
		out, errOut, err := waitResult(t, d.podhostWait(tc.args...))
		if out != tc.out || (tc.err == "") != (err == nil) || !strings.Contains(errOut, tc.err) {
			t.Errorf("wait %q: %v, stdout %q, stderr %q; want stdout %q, stderr %q", tc.args, err, out, errOut, tc.out, tc.err)
		}
	}

	deleted := d.podhostWait("--for=delete", "pod/web", "--timeout=90s")
	time.Sleep(300 * time.Millisecond) // not a wait: lets the wait see the pod first (a missing pod is met at once)
	d.removeManifest("web.yaml")
	if out, errOut, err := waitResult(t, deleted); err != nil || out != "pod/web condition met\n" {
		t.Fatalf("wait --for=delete: %v, stdout %q, stderr %q", err, out, errOut)
	}
	if hostProcess("sleep\x003601") {
		t.Fatal("wait --for=delete returned while the pod's sleep 3601 still runs on the host")
	}
}
