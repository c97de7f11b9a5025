//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/services/api"
	"github.com/podhost/podhost/internal/testenv"
)

// podhostd is one podhost daemon under test, with private dirs, talking to
// the suite's private containerd.
type podhostd struct {
	t           testing.TB
	dir         string
	manifestDir string
	stateDir    string
	logDir      string
	socket      string
	configPath  string
	cgroupRoot  string
	kubeAddr    string // the kube API's TCP address (enableKubeAPI)
	kubeconfig  string // what `podhost kubeconfig` wrote (useKubectl)
	cmd         *exec.Cmd
	exited      chan struct{}
	out         *bytes.Buffer
	client      *api.Client
	stuck       string // what podhost and the shims waited on when a wait failed (captureStuck)
}

// newPodhostd prepares dirs and config; start() runs it. The test's cleanup
// removes every manifest, waits for podhost to tear every pod down, and
// stops the daemon.
func newPodhostd(t testing.TB) *podhostd {
	t.Helper()
	testenv.RequirePodhost(t, env)
	importTestImage(t)
	dir, err := os.MkdirTemp(env.Dir, "ph-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &podhostd{
		t: t, dir: dir,
		manifestDir: filepath.Join(dir, "manifests"),
		stateDir:    filepath.Join(dir, "state"),
		logDir:      filepath.Join(dir, "logs"),
		socket:      filepath.Join(dir, "podhost.sock"),
		configPath:  filepath.Join(dir, "config.yaml"),
		cgroupRoot:  strings.TrimPrefix(env.CgroupPrefix, "/") + "/podhost",
	}
	if err := os.MkdirAll(d.manifestDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// No TCP kube API by default: tests that want one pick a free port
	// (enableKubeAPI), never the default 6443 a dev podhost may hold. No
	// disk eviction thresholds (harnessEvictionHard): the shared machine's
	// disk, not the test, would decide what runs.
	cfg := fmt.Sprintf("cgroupParent: %s\nrelistPeriod: 5s\nkubeAPIAddress: \"\"\n%s", d.cgroupRoot, harnessEvictionHard)
	if err := os.WriteFile(d.configPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d.client = api.NewClient(d.socket)
	t.Cleanup(d.teardown)
	return d
}

// harnessEvictionHard is the config line every test daemon starts with:
// the kubelet's default memory.available threshold only (eviction tests
// set their own with setEvictionHard).
const harnessEvictionHard = "evictionHard: {memory.available: 100Mi}\n"

func (d *podhostd) args() []string {
	return []string{
		"--config", d.configPath, "--socket", d.socket, "--manifest-dir", d.manifestDir,
		"daemon",
		"--state-dir", d.stateDir, "--log-dir", d.logDir, "--run-dir", filepath.Join(env.RunDir, filepath.Base(d.dir)),
		"--containerd-address", env.Address, "--namespace", env.Namespace,
		"--cni-conf-dir", env.CNIConfDir, "--cni-bin-dir", strings.Join(env.CNIBinDirs, ","),
		"--cgroup-driver", "cgroupfs",
	}
}

// start runs the daemon and waits until it is ready (first full sync done).
func (d *podhostd) start() {
	d.t.Helper()
	d.startNoWait()
	d.waitReady(60 * time.Second)
}

func (d *podhostd) startNoWait() {
	d.t.Helper()
	d.startArgs(d.args())
}

// startArgs is startNoWait with the daemon's arguments given.
func (d *podhostd) startArgs(args []string) {
	d.t.Helper()
	cmd := exec.Command(env.PodhostBin, args...)
	cmd.Env = append(os.Environ(), "PODHOST_LOG_LEVEL=debug")
	if d.out == nil {
		d.out = &bytes.Buffer{}
	}
	cmd.Stdout, cmd.Stderr = &syncWriter{w: d.out}, &syncWriter{w: d.out}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd, d.exited = cmd, make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(cmd, d.exited)
}

func (d *podhostd) waitReady(timeout time.Duration) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		if err := d.client.Ready(ctx); err == nil {
			return
		}
		select {
		case <-d.exited:
			d.t.Fatalf("podhost exited early:\n%s", d.logs())
		case <-ctx.Done():
			d.t.Fatalf("podhost not ready after %v:\n%s", timeout, d.logs())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kill sends sig to the daemon and waits for it to exit.
func (d *podhostd) kill(sig syscall.Signal) {
	d.t.Helper()
	if d.cmd == nil {
		return
	}
	if !signalAndWait(d.cmd.Process, d.exited, sig) {
		d.t.Errorf("podhost did not exit on %v", sig)
	}
	d.cmd = nil
}

// signalAndWait sends sig to p and waits for exited to close; false if
// it had to be killed after 30 s.
func signalAndWait(p *os.Process, exited <-chan struct{}, sig syscall.Signal) bool {
	_ = p.Signal(sig)
	select {
	case <-exited:
		return true
	case <-time.After(30 * time.Second):
		_ = p.Kill()
		<-exited
		return false
	}
}

// logMark is where the daemon's output ends now; logsSince(mark) is what
// came after it, whole (logs() keeps only the tail).
func (d *podhostd) logMark() int {
	if d.out == nil {
		return 0
	}
	return len(d.out.String())
}

func (d *podhostd) logsSince(mark int) string {
	if d.out == nil {
		return ""
	}
	return d.out.String()[mark:]
}

func (d *podhostd) logs() string {
	if d.out == nil {
		return ""
	}
	s := d.out.String()
	if len(s) > 20000 {
		s = "...\n" + s[len(s)-20000:]
	}
	return s
}

// teardown deletes every manifest, waits until podhost has removed every
// pod and container, then stops it.
func (d *podhostd) teardown() {
	if d.cmd == nil {
		return
	}
	entries, _ := os.ReadDir(d.manifestDir)
	for _, e := range entries {
		_ = os.Remove(filepath.Join(d.manifestDir, e.Name()))
	}
	err := waitFor(90*time.Second, func() (bool, error) {
		l, err := d.client.ListPods(context.Background())
		if err != nil {
			return false, err
		}
		if len(l.Items) > 0 {
			return false, nil
		}
		// A pod leaves the API at once; its sandbox (netns, IP lease) is
		// released a little later, also for pods that never had a container.
		if sbs, _ := os.ReadDir(filepath.Join(env.RunDir, filepath.Base(d.dir), "sandboxes")); len(sbs) > 0 {
			return false, nil
		}
		n, err := countContainers()
		return n == 0, err
	})
	if err != nil {
		d.t.Errorf("teardown: pods not cleaned up: %v\n%s", err, d.logs())
	}
	d.kill(syscall.SIGTERM)
	if d.t.Failed() || os.Getenv("PODHOST_TEST_LOG") != "" {
		d.t.Logf("podhost log:\n%s", d.logs())
	}
	if d.stuck != "" {
		d.t.Logf("when the wait failed:\n%s", d.stuck)
	}
}

// writeManifest writes a manifest atomically (temp + rename), as `apply` does.
func (d *podhostd) writeManifest(name, content string) {
	d.t.Helper()
	tmp := filepath.Join(d.manifestDir, ".tmp-"+name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(d.manifestDir, name)); err != nil {
		d.t.Fatal(err)
	}
}

func (d *podhostd) removeManifest(name string) {
	d.t.Helper()
	if err := os.Remove(filepath.Join(d.manifestDir, name)); err != nil {
		d.t.Fatal(err)
	}
}

// pod returns the pod's API view (nil if absent).
func (d *podhostd) pod(name string) *corev1.Pod {
	p, err := d.client.GetPod(context.Background(), "default", name)
	if err != nil {
		return nil
	}
	return p
}

// waitPod waits until cond holds for pod name.
func (d *podhostd) waitPod(name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	d.t.Helper()
	var last *corev1.Pod
	err := waitFor(timeout, func() (bool, error) {
		last = d.pod(name)
		return last != nil && cond(last), nil
	})
	if err != nil {
		d.captureStuck()
		d.t.Fatalf("pod %s: %s: not reached in %v; last status: %s\n%s", name, what, timeout, statusSummary(last), d.logs())
	}
	return last
}

func (d *podhostd) waitRunning(name string) *corev1.Pod {
	d.t.Helper()
	return d.waitPod(name, 60*time.Second, "all containers running", allRunning)
}

func allRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

func statusSummary(p *corev1.Pod) string {
	if p == nil {
		return "<no pod>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase=%s reason=%s ip=%s", p.Status.Phase, p.Status.Reason, p.Status.PodIP)
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		fmt.Fprintf(&b, " [%s restarts=%d %s]", cs.Name, cs.RestartCount, stateString(cs.State))
	}
	return b.String()
}

func stateString(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated(%s,%d)", s.Terminated.Reason, s.Terminated.ExitCode)
	case s.Waiting != nil:
		return fmt.Sprintf("waiting(%s: %s)", s.Waiting.Reason, s.Waiting.Message)
	}
	return "?"
}

// waitScale stretches every waitFor deadline (PODHOST_TEST_WAIT_SCALE,
// default 3). A wait ends as soon as its condition holds, so a generous
// deadline costs a passing test nothing, while a loaded 2-core machine
// (CI, a `make run` beside the suite) needs it: deadlines here are for
// "it happens", never for "it happens fast" (speed lives in make bench).
var waitScale = func() time.Duration {
	if n, err := strconv.Atoi(os.Getenv("PODHOST_TEST_WAIT_SCALE")); err == nil && n > 0 {
		return time.Duration(n)
	}
	return 3
}()

// waitFor polls cond (every 25 ms) until it returns true, an error
// persists past the deadline, or timeout (× waitScale) passes.
func waitFor(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout * waitScale)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		lastErr = err
		if time.Now().After(deadline) {
			if lastErr != nil {
				return lastErr
			}
			return errors.New("timed out")
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// httpGet fetches url with a short timeout.
func httpGet(url string) (string, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	return b.String(), err
}

var importOnce sync.Once

// importTestImage imports the test image into the suite's namespace with
// `podhost images import`, once.
func importTestImage(t testing.TB) {
	t.Helper()
	var err error
	var out []byte
	importOnce.Do(func() {
		cmd := exec.Command(env.PodhostBin, "images", "import", env.ImageTar,
			"--containerd-address", env.Address, "--namespace", env.Namespace)
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		t.Fatalf("podhost images import: %v\n%s", err, out)
	}
}

// waitAllRunning waits until n pods are listed and all are Running.
func (d *podhostd) waitAllRunning(n int, timeout time.Duration) {
	d.t.Helper()
	err := waitFor(timeout, func() (bool, error) {
		l, err := d.client.ListPods(context.Background())
		if err != nil || len(l.Items) != n {
			return false, nil
		}
		for i := range l.Items {
			if !allRunning(&l.Items[i]) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		d.captureStuck()
		d.t.Fatalf("%d pods not all running after %v: %v\n%s", n, timeout, err, d.logs())
	}
}

// waitAllRunningWatched waits until n pods run, seen through the API's
// watch as kubectl wait sees them: polling the list of every pod (what
// waitAllRunning does, every 25 ms) would take the CPU of the cold start it
// measures — at 100 pods a few hundred lists, each encoded by podhost and
// decoded here. Connects as soon as the daemon's API answers.
func (d *podhostd) waitAllRunningWatched(n int, timeout time.Duration) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errDone := errors.New("all running")
	for {
		running := map[string]bool{}
		count := 0
		err := d.client.WatchPods(ctx, func(e api.WatchEvent) error {
			key := e.Object.Namespace + "/" + e.Object.Name
			now := e.Type != api.WatchDeleted && allRunning(&e.Object)
			if now != running[key] {
				running[key] = now
				if now {
					count++
				} else {
					count--
				}
			}
			if count >= n {
				return errDone
			}
			return nil
		})
		switch {
		case errors.Is(err, errDone):
			return
		case ctx.Err() != nil:
			d.captureStuck()
			d.t.Fatalf("%d pods not all running after %v (%d running)\n%s", n, timeout, count, d.logs())
		}
		select { // the API is not up yet, or the watch broke: again
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}
