//go:build integration

package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

var (
	driverOnce sync.Once
	driverPath string
	driverErr  error
)

// logDriver builds the log driver podhost installs beside itself (`make
// build`: scripts/build-log-driver.sh).
func logDriver(t *testing.T) string {
	t.Helper()
	driverOnce.Do(func() {
		driverPath = filepath.Join(env.Dir, "podhost-log-driver")
		cmd := exec.Command("scripts/build-log-driver.sh", driverPath)
		cmd.Dir = env.RepoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			driverErr = fmt.Errorf("build log driver: %w\n%s", err, out)
		}
	})
	if driverErr != nil {
		t.Fatal(driverErr)
	}
	return driverPath
}

func connect(t *testing.T) *runtime.Runtime {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rt, err := runtime.Connect(ctx, env.Address, env.Namespace, runtime.Options{
		Snapshotter: env.Snapshotter, LogDriver: logDriver(t), AuthFiles: []string{},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func importImage(t *testing.T, ctx context.Context, rt *runtime.Runtime) runtime.Image {
	t.Helper()
	f, err := os.Open(env.ImageTar)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imgs, err := rt.ImportImage(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range imgs {
		if img.Ref == env.ImageRef {
			return img
		}
	}
	t.Fatalf("imported %+v, no %s", imgs, env.ImageRef)
	return runtime.Image{}
}

var seq struct {
	sync.Mutex
	n int
}

// newContainer creates a container running args in a fresh pod.
func newContainer(t *testing.T, ctx context.Context, rt *runtime.Runtime, img runtime.Image, args []string, extra ...oci.SpecOpts) (id, uid, logPath string) {
	t.Helper()
	seq.Lock()
	seq.n++
	n := seq.n
	seq.Unlock()
	id = fmt.Sprintf("rt-%d-%d", os.Getpid(), n)
	uid = fmt.Sprintf("uid-%d-%d", os.Getpid(), n)
	logPath = logs.Path(t.TempDir(), "default", "web", uid, "c", 0)
	err := rt.CreateContainer(ctx, runtime.ContainerConfig{
		ID:    id,
		Image: img,
		Labels: map[string]string{
			wellknown.LabelPodUID: uid, wellknown.LabelPodName: "web", wellknown.LabelPodNamespace: "default",
			wellknown.LabelContainerName: "c", wellknown.LabelSandboxID: "sb-" + uid,
			wellknown.LabelSpecHash: "h1", wellknown.LabelRestartCount: "0", wellknown.LabelAttempt: "2",
		},
		SpecOpts: append([]oci.SpecOpts{
			oci.WithProcessArgs(args...),
			oci.WithDefaultPathEnv,
			oci.WithCgroup(env.CgroupPrefix + "/" + id),
		}, extra...),
		LogPath: logPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveContainer(context.Background(), id) })
	return id, uid, logPath
}

func findContainer(t *testing.T, ctx context.Context, rt *runtime.Runtime, uid, id string) (*podstate.Pod, *podstate.Container) {
	t.Helper()
	pods, err := rt.ListPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		for _, c := range p.Containers {
			if c.ID == id {
				if string(p.UID) != uid {
					t.Fatalf("container %s in pod %s, want %s", id, p.UID, uid)
				}
				return p, c
			}
		}
	}
	return nil, nil
}

// waitFile polls path until cond holds for its content.
func waitFile(t *testing.T, path string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if cond(string(b)) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: condition not met; content:\n%s", path, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestImages(t *testing.T) {
	rt := connect(t)
	ctx := context.Background()
	// First of all (no other test imported it yet in this fresh namespace).
	if _, err := rt.EnsureImage(ctx, env.ImageRef, corev1.PullNever); !errors.Is(err, runtime.ErrImageNeverPull) {
		t.Fatalf("Never before import: %v", err)
	}
	img := importImage(t, ctx, rt)
	if img.Digest == "" || img.Size == 0 || len(img.Config.Cmd) == 0 {
		t.Fatalf("image %+v", img)
	}
	for _, policy := range []corev1.PullPolicy{corev1.PullNever, corev1.PullIfNotPresent, ""} {
		got, err := rt.EnsureImage(ctx, env.ImageRef, policy)
		if err != nil || got.Digest != img.Digest || got.Ref != env.ImageRef {
			t.Fatalf("%q: %+v %v", policy, got, err)
		}
	}
	// Always must pull; podhost.test does not resolve: ErrImagePull even
	// though a local copy exists (kubelet semantics).
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := rt.EnsureImage(pctx, env.ImageRef, corev1.PullAlways); !errors.Is(err, runtime.ErrImagePull) {
		t.Fatalf("Always: %v", err)
	}
	list, err := rt.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, i := range list {
		found = found || i.Ref == env.ImageRef
	}
	if !found {
		t.Fatalf("ListImages: %+v", list)
	}
}

func TestContainerLifecycle(t *testing.T) {
	rt := connect(t)
	ctx := context.Background()
	img := importImage(t, ctx, rt)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := rt.Events(ectx)
	id, uid, logPath := newContainer(t, ctx, rt, img, []string{"sh", "-c", "echo out; echo err >&2; sleep 100"})

	_, c := findContainer(t, ctx, rt, uid, id)
	if c == nil || c.State != podstate.StateCreated {
		t.Fatalf("after create: %+v", c)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFile(t, logPath, func(s string) bool {
		return strings.Contains(s, " stdout F out\n") && strings.Contains(s, " stderr F err\n")
	})
	pod, c := findContainer(t, ctx, rt, uid, id)
	if c == nil || c.State != podstate.StateRunning || c.PID == 0 || c.StartedAt.IsZero() {
		t.Fatalf("after start: %+v", c)
	}
	if pod.Name != "web" || pod.Namespace != "default" || c.Name != "c" || c.Hash != "h1" ||
		c.SandboxID != "sb-"+uid || c.Attempt != 2 || c.ImageRef != img.Digest || c.Image != env.ImageRef {
		t.Fatalf("labels not mapped: pod %+v container %+v", pod, c)
	}
	checkSpec(t, ctx, uid, id)
	waitEvent(t, events, id, runtime.EventStart)
	testExec(t, ctx, rt, id)

	// sh as PID 1 ignores SIGTERM: the stop must escalate to SIGKILL.
	start := time.Now()
	if err := rt.StopContainer(ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("stopped after %v: SIGTERM should have been ignored", d)
	}
	ev := waitEvent(t, events, id, runtime.EventExit)
	if ev.ExitCode != 137 {
		t.Fatalf("exit event %+v", ev)
	}
	_, c = findContainer(t, ctx, rt, uid, id)
	if c.State != podstate.StateExited || c.ExitCode != 137 || c.Reason != "Error" || c.FinishedAt.IsZero() {
		t.Fatalf("after stop: %+v", c)
	}
	if err := rt.StopContainer(ctx, id, time.Second); err != nil {
		t.Fatalf("stop of a stopped container: %v", err)
	}
	checkLogs(t, logPath)
	removeAndCheck(t, ctx, rt, id)
}

func checkSpec(t *testing.T, ctx context.Context, uid, id string) {
	t.Helper()
	c, err := env.Client().LoadContainer(env.Context(ctx), id)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := c.Spec(env.Context(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Annotations[runtime.ShimGroupAnnotation]; got != "sb-"+uid {
		t.Fatalf("shim group annotation %q", got)
	}
	labels, _ := c.Labels(env.Context(ctx))
	for k := range labels {
		if strings.HasPrefix(k, "containerd.io/restart") {
			t.Fatalf("restart monitor label %s set", k)
		}
	}
}

func testExec(t *testing.T, ctx context.Context, rt *runtime.Runtime, id string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code, err := rt.Exec(ctx, id, []string{"sh", "-c", "cat; echo e >&2; exit 3"},
		strings.NewReader("hello"), &stdout, &stderr, false)
	if err != nil || code != 3 || stdout.String() != "hello" || stderr.String() != "e\n" {
		t.Fatalf("exec: code %d err %v stdout %q stderr %q", code, err, stdout.String(), stderr.String())
	}
	code, err = rt.Exec(ctx, id, []string{"true"}, nil, nil, nil, false)
	if err != nil || code != 0 {
		t.Fatalf("exec true: %d %v", code, err)
	}
	var tty bytes.Buffer
	code, err = rt.Exec(ctx, id, []string{"sh", "-c", "test -t 1 && echo tty"}, nil, &tty, nil, true)
	if err != nil || code != 0 || tty.String() != "tty\r\n" {
		t.Fatalf("exec with tty: %d %v %q", code, err, tty.String())
	}
	// A cancelled exec is killed and reports ctx's error.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := rt.Exec(cctx, id, []string{"sleep", "100"}, nil, nil, nil, false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled exec: %v", err)
	}
}

// waitEvents waits until events of every type in types arrived for id, in
// any order.
func waitEvents(t *testing.T, events <-chan runtime.Event, id string, types ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, typ := range types {
		want[typ] = true
	}
	timeout := time.After(60 * time.Second)
	for len(want) > 0 {
		select {
		case ev := <-events:
			if ev.ContainerID == id {
				delete(want, ev.Type)
			}
		case <-timeout:
			t.Fatalf("no %v event for %s", want, id)
		}
	}
}

func waitEvent(t *testing.T, events <-chan runtime.Event, id, typ string) runtime.Event {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.ContainerID == id && ev.Type == typ {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event for %s", typ, id)
		}
	}
}

func checkLogs(t *testing.T, logPath string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := logs.Read(context.Background(), logPath, logs.ReadOptions{Tail: logs.TailAll}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "out\n" || stderr.String() != "err\n" {
		t.Fatalf("logs: stdout %q stderr %q", stdout.String(), stderr.String())
	}
}

func removeAndCheck(t *testing.T, ctx context.Context, rt *runtime.Runtime, id string) {
	t.Helper()
	if err := rt.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	nctx := env.Context(ctx)
	if _, err := env.Client().LoadContainer(nctx, id); !errdefs.IsNotFound(err) {
		t.Fatalf("container still there: %v", err)
	}
	if _, err := env.Client().SnapshotService(env.Snapshotter).Stat(nctx, id); !errdefs.IsNotFound(err) {
		t.Fatalf("snapshot still there: %v", err)
	}
	if err := rt.RemoveContainer(ctx, id); err != nil {
		t.Fatalf("second remove: %v", err)
	}
	if err := rt.StopContainer(ctx, id, time.Second); err != nil {
		t.Fatalf("stop of a removed container: %v", err)
	}
}

func TestStopSignalHonoured(t *testing.T) {
	rt := connect(t)
	ctx := context.Background()
	img := importImage(t, ctx, rt)
	img.Config.StopSignal = "SIGUSR1" // as if the image said STOPSIGNAL SIGUSR1
	id, uid, logPath := newContainer(t, ctx, rt, img, []string{"sh", "-c",
		`trap "echo bye; exit 0" USR1; echo ready; while true; do sleep 0.1; done`},
		oci.WithUser("nobody")) // resolved from the image's /etc/passwd: the rootfs must be there
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFile(t, logPath, func(s string) bool { return strings.Contains(s, "F ready\n") })
	var out, errOut bytes.Buffer
	if code, err := rt.Exec(ctx, id, []string{"id", "-u"}, nil, &out, &errOut, false); err != nil || code != 0 || out.String() != "65534\n" {
		t.Fatalf("exec id -u: %d %v stdout %q stderr %q", code, err, out.String(), errOut.String())
	}
	start := time.Now()
	if err := rt.StopContainer(ctx, id, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("stop took %v: stop signal not delivered?", d)
	}
	_, c := findContainer(t, ctx, rt, uid, id)
	if c.State != podstate.StateExited || c.ExitCode != 0 || c.Reason != "Completed" {
		t.Fatalf("after stop: %+v", c)
	}
	waitFile(t, logPath, func(s string) bool { return strings.Contains(s, "F bye\n") })
	removeAndCheck(t, ctx, rt, id)
}

func TestOOMKilled(t *testing.T) {
	rt := connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	img := importImage(t, ctx, rt)
	events := rt.Events(ctx)
	// busybox tail buffers a "line" of /dev/zero forever.
	limit := int64(32 << 20)
	id, uid, _ := newContainer(t, ctx, rt, img, []string{"tail", "/dev/zero"},
		oci.WithMemoryLimit(uint64(limit)), oci.WithMemorySwap(limit))
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	// Either may come first: the exit is the shim's, the OOM the cgroup
	// watcher's, which lags under load.
	waitEvents(t, events, id, runtime.EventOOM, runtime.EventExit)
	_, pc := findContainer(t, ctx, rt, uid, id)
	if pc.State != podstate.StateExited || pc.Reason != "OOMKilled" || pc.ExitCode != 137 {
		t.Fatalf("after OOM: %+v", pc)
	}
	if pc.Labels[wellknown.LabelOOM] != "true" {
		t.Fatalf("OOM label missing: %v", pc.Labels)
	}
	// A new Runtime (podhost restarted) still knows from the label.
	rt2 := connect(t)
	_, pc = findContainer(t, ctx, rt2, uid, id)
	if pc.Reason != "OOMKilled" {
		t.Fatalf("after reconnect: %+v", pc)
	}
	removeAndCheck(t, ctx, rt, id)
}

func TestCreateContainerRequiresPodLabel(t *testing.T) {
	rt := connect(t)
	err := rt.CreateContainer(context.Background(), runtime.ContainerConfig{ID: "x"})
	if !errdefs.IsInvalidArgument(err) {
		t.Fatalf("got %v", err)
	}
}

func TestConnectGivesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := runtime.Connect(ctx, filepath.Join(t.TempDir(), "none.sock"), "x", runtime.Options{}); err == nil {
		t.Fatal("connected to nothing")
	}
}

// TestEventsRelistAfterRestart must run last: it restarts containerd.
func TestEventsRelistAfterRestart(t *testing.T) {
	rt := connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := rt.Events(ctx)
	time.Sleep(200 * time.Millisecond) // let the subscription reach containerd
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	if err := env.RestartContainerd(rctx); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == runtime.EventRelist {
				if _, err := rt.ListPods(ctx); err != nil {
					t.Fatalf("list after restart: %v", err)
				}
				return
			}
		case <-timeout:
			t.Fatal("no relist event after containerd restart")
		}
	}
}
