//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/config"
)

// TestRobustTwoInstances: two podhost daemons on one host and one
// containerd, in two containerd namespaces, both with the default cgroup
// parent (which follows the namespace). Churn with SIGKILLs on the first
// never touches the second's pods (same container IDs, same PIDs, restart
// count 0) or pod cgroups, and the second's housekeeping never touches the
// first's steady pod.
func TestRobustTwoInstances(t *testing.T) {
	nsA, nsB := env.Namespace, env.Namespace+"-b"
	t.Cleanup(func() { // after both teardowns
		removeCgroupParents(t, nsA, nsB)
		_ = os.Remove(filepath.Join("/run/containerd/runc", nsB)) // runc's state dir, empty by then
	})
	importInto(t, nsB)
	a, b := newPodhostd(t), newPodhostd(t)
	t.Cleanup(func() { drainBoth(t, a, b, nsA, nsB) }) // before the teardowns
	for _, x := range []struct {
		d  *podhostd
		ns string
	}{{a, nsA}, {b, nsB}} {
		x.d.cgroupRoot = config.DefaultCgroupParentFor(x.ns)
		if err := os.WriteFile(x.d.configPath, []byte("relistPeriod: 5s\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args := x.d.args()
		args[slices.Index(args, "--namespace")+1] = x.ns
		x.d.startArgs(args)
		x.d.waitReady(60 * time.Second)
	}
	if a.cgroupRoot == b.cgroupRoot {
		t.Fatalf("both instances use cgroup parent %s", a.cgroupRoot)
	}
	b.writeManifest("b0.yaml", sleeper("b0", 1, ""))
	b.writeManifest("b1.yaml", sleeper("b1", 1, ""))
	a.writeManifest("steady.yaml", sleeper("steady", 1, ""))
	bPods := []*corev1.Pod{b.waitRunning("b0"), b.waitRunning("b1")}
	steady := a.waitRunning("steady")
	bTasks, aTasks := nsTasks(t, nsB), nsTasks(t, nsA)
	bCgroups := podCgroups(b)
	if len(bTasks) != 2 || len(aTasks) != 1 || len(bCgroups) == 0 {
		t.Fatalf("tasks A %v, B %v; cgroups B %v", aTasks, bTasks, bCgroups)
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	for op := 0; op < 40; op++ {
		name := fmt.Sprintf("a%d", rng.IntN(3))
		if _, err := os.Stat(filepath.Join(a.manifestDir, name+".yaml")); err == nil && rng.IntN(3) == 0 {
			a.removeManifest(name + ".yaml")
			churnWait(t, a, name, func(uid types.UID) bool { return uid == "" })
		} else {
			old := churnUID(a, name)
			a.writeManifest(name+".yaml", sleeper(name, 1, fmt.Sprintf("    env: [{name: V, value: \"%d\"}]\n", op)))
			churnWait(t, a, name, func(uid types.UID) bool { return uid != "" && uid != old })
		}
		if rng.IntN(8) == 0 {
			a.kill(syscall.SIGKILL)
			a.startNoWait()
		}
		if op == 20 { // B's housekeeping and syncs run meanwhile too
			b.writeManifest("b2.yaml", sleeper("b2", 1, ""))
		}
	}
	for i := 0; i < 3; i++ {
		_ = os.Remove(filepath.Join(a.manifestDir, fmt.Sprintf("a%d.yaml", i)))
	}
	b.removeManifest("b2.yaml")
	if err := waitFor(60*time.Second, func() (bool, error) {
		return len(nsTasks(t, nsA)) == 1 && len(nsTasks(t, nsB)) == 2 && onlyPod(podCgroups(a), steady.UID), nil
	}); err != nil {
		t.Fatalf("after churn: tasks A %v, B %v; cgroups A %v, B %v\n%s", nsTasks(t, nsA), nsTasks(t, nsB), podCgroups(a), podCgroups(b), a.logs())
	}
	assertSameTasks(t, "B", bTasks, nsTasks(t, nsB))
	assertSameTasks(t, "A's steady pod", aTasks, nsTasks(t, nsA))
	assertSameStrings(t, "B's pod cgroups", bCgroups, podCgroups(b))
	for _, p := range append(bPods, steady) {
		d := b
		if p.Name == "steady" {
			d = a
		}
		if now := d.pod(p.Name); now == nil || now.UID != p.UID || !allRunning(now) || now.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Fatalf("pod %s changed: %s", p.Name, statusSummary(now))
		}
	}
}

// onlyPod: every cgroup path is one of pod uid's.
func onlyPod(paths []string, uid types.UID) bool {
	for _, p := range paths {
		if !strings.Contains(p, "pod"+string(uid)) {
			return false
		}
	}
	return len(paths) > 0
}

// drainBoth deletes every manifest of both instances and waits until
// neither namespace has a container (the harness teardown only counts the
// suite's namespace).
func drainBoth(t *testing.T, a, b *podhostd, nsA, nsB string) {
	for _, d := range []*podhostd{a, b} {
		entries, _ := os.ReadDir(d.manifestDir)
		for _, e := range entries {
			_ = os.Remove(filepath.Join(d.manifestDir, e.Name()))
		}
	}
	if err := waitFor(90*time.Second, func() (bool, error) {
		na, err := env.Client().ContainerService().List(namespaces.WithNamespace(context.Background(), nsA))
		if err != nil {
			return false, err
		}
		nb, err := env.Client().ContainerService().List(namespaces.WithNamespace(context.Background(), nsB))
		return len(na)+len(nb) == 0, err
	}); err != nil {
		t.Errorf("containers left in %s/%s: %v", nsA, nsB, err)
	}
}

// nsTasks maps container ID to PID of the running tasks in namespace ns.
func nsTasks(t *testing.T, ns string) map[string]uint32 {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), ns)
	resp, err := env.Client().TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint32{}
	for _, p := range resp.Tasks {
		if alive(int(p.Pid)) {
			out[p.ID] = p.Pid
		}
	}
	return out
}

func assertSameTasks(t *testing.T, what string, want, got map[string]uint32) {
	t.Helper()
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("%s: tasks (id: pid) were %v, now %v", what, want, got)
	}
}

// importInto imports the test image into containerd namespace ns.
func importInto(t *testing.T, ns string) {
	t.Helper()
	out, err := exec.Command(env.PodhostBin, "images", "import", env.ImageTar,
		"--containerd-address", env.Address, "--namespace", ns).CombinedOutput()
	if err != nil {
		t.Fatalf("podhost images import --namespace %s: %v\n%s", ns, err, out)
	}
}

// removeCgroupParents removes the (by then empty) cgroup parents the
// instances made at the top of each hierarchy, deepest first.
func removeCgroupParents(t *testing.T, nss ...string) {
	for _, ns := range nss {
		for _, ctrl := range []string{"memory", "cpu", "pids", "cpuset", "cpuacct", "blkio", "devices", "freezer", "hugetlb", "net_cls", "perf_event", "systemd"} {
			root := filepath.Join("/sys/fs/cgroup", ctrl, config.DefaultCgroupParentFor(ns))
			var dirs []string
			_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := syscall.Rmdir(dirs[i]); err != nil && !strings.Contains(err.Error(), "no such file") {
					t.Errorf("remove cgroup %s: %v", dirs[i], err)
				}
			}
		}
	}
}
