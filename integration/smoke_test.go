//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/netns"
	gocni "github.com/containerd/go-cni"

	"github.com/podhost/podhost/internal/testenv"
)

// The smoke tests prove the harness end to end: private containerd, test
// image, runc, cgroups under the test prefix, CNI config, containerd restart.

func TestSmokeEchoHello(t *testing.T) {
	img := testImage(t)
	ctr := newContainer(t, img, uniqueID("smoke-echo"), []string{"busybox", "echo", "hello"})
	stdout, stderr, code := runToCompletion(t, ctr)
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	if stdout != "hello\n" {
		t.Fatalf("stdout %q, want %q", stdout, "hello\n")
	}
}

func TestSmokeExitCodeAndImageConfig(t *testing.T) {
	img := testImage(t)
	// PATH comes from the image config; applets are symlinks in /bin etc.
	ctr := newContainer(t, img, uniqueID("smoke-exit"), []string{"sh", "-c",
		`command -v wget >/dev/null && test -d /var/www && id -un && echo "$PATH" >&2; exit 3`})
	stdout, stderr, code := runToCompletion(t, ctr)
	if code != 3 {
		t.Fatalf("exit code %d, want 3 (stdout %q stderr %q)", code, stdout, stderr)
	}
	if stdout != "root\n" || !strings.Contains(stderr, "/usr/bin") {
		t.Fatalf("stdout %q stderr %q", stdout, stderr)
	}
}

// The container's cgroups are under env.CgroupPrefix in every hierarchy, so
// Close can remove them.
func TestSmokeCgroupUnderPrefix(t *testing.T) {
	img := testImage(t)
	ctr := newContainer(t, img, uniqueID("smoke-cg"), []string{"cat", "/proc/self/cgroup"})
	stdout, stderr, code := runToCompletion(t, ctr)
	if code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue // the controller-less cgroup2 line of a hybrid host
		}
		if !strings.HasPrefix(parts[2], env.CgroupPrefix+"/") {
			t.Errorf("cgroup %q is not under %s", l, env.CgroupPrefix)
		}
	}
}

// `ctr images import` names the image exactly like client.Import does.
func TestSmokeCtrImport(t *testing.T) {
	ctr(t, "images", "import", "--snapshotter", env.Snapshotter, env.ImageTar)
	out := ctr(t, "images", "ls", "-q")
	if names := strings.Fields(out); len(names) < 1 || !contains(names, env.ImageRef) {
		t.Fatalf("ctr images ls: %q, want %s", out, env.ImageRef)
	}
	for _, n := range strings.Fields(out) {
		if strings.HasPrefix(n, "import-") {
			t.Errorf("ctr named an image %q: the test image's annotations are not honoured", n)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// A running container survives RestartContainerd and is still controllable
// through the same client afterwards.
func TestSmokeRestartContainerd(t *testing.T) {
	img := testImage(t)
	ctr := newContainer(t, img, uniqueID("smoke-restart"), []string{"sh", "-c", "trap 'exit 7' TERM; sleep 600 & wait"})
	ctx := testCtx(t, 2*time.Minute)
	task, err := ctr.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pid := task.Pid()

	if err := env.RestartContainerd(ctx); err != nil {
		t.Fatalf("restart containerd: %v", err)
	}
	if err := syscall.Kill(int(pid), 0); err != nil {
		t.Fatalf("container process %d died with containerd: %v", pid, err)
	}
	// Reload the task through the reconnected client.
	task, err = ctr.Task(ctx, nil)
	if err != nil {
		t.Fatalf("task after restart: %v", err)
	}
	st, err := task.Status(ctx)
	if err != nil || st.Status != client.Running {
		t.Fatalf("task status after restart: %v %v", st.Status, err)
	}
	exitCh, err := task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Kill(ctx, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case es := <-exitCh:
		if es.ExitCode() != 7 {
			t.Fatalf("exit code %d, want 7", es.ExitCode())
		}
	case <-ctx.Done():
		t.Fatal("no exit event after restart")
	}
}

// The CNI config written into env.CNIConfDir (derived from
// manifests/cni/10-podhost.conflist) attaches a netns to the test bridge.
func TestSmokeCNI(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	ns, err := netns.NewNetNS(filepath.Join(env.RunDir, "netns"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Remove() })
	cni, err := gocni.New(gocni.WithPluginDir(env.CNIBinDirs), gocni.WithPluginConfDir(env.CNIConfDir),
		gocni.WithMinNetworkCount(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := cni.Load(gocni.WithLoNetwork, gocni.WithDefaultConf); err != nil {
		t.Fatalf("load CNI config from %s: %v", env.CNIConfDir, err)
	}
	id := uniqueID("smoke-cni")
	ports := []gocni.PortMapping{{HostPort: int32(testenv.FreePort(t)), ContainerPort: 8080, Protocol: "tcp"}}
	res, err := cni.Setup(ctx, id, ns.GetPath(), gocni.WithCapabilityPortMap(ports))
	if err != nil {
		t.Fatalf("CNI ADD: %v", err)
	}
	t.Cleanup(func() {
		// Before ns.Remove (cleanups run last-in first-out): the bridge
		// plugin only removes its ipMasq rules while the netns exists.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cni.Remove(ctx, id, ns.GetPath(), gocni.WithCapabilityPortMap(ports)); err != nil {
			t.Errorf("CNI DEL: %v", err)
		}
	})
	ip := res.Interfaces["eth0"]
	if ip == nil || len(ip.IPConfigs) == 0 {
		t.Fatalf("no IP on eth0: %+v", res)
	}
	prefix := strings.TrimSuffix(env.CNISubnet, "0/24")
	if got := ip.IPConfigs[0].IP.String(); !strings.HasPrefix(got, prefix) {
		t.Fatalf("IP %s not in %s", got, env.CNISubnet)
	}
	if _, err := os.Stat("/sys/class/net/" + env.CNIBridge); err != nil {
		t.Fatalf("bridge %s: %v", env.CNIBridge, err)
	}
}
