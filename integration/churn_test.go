//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	apitask "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// churnOps is how many create/edit/delete operations one churn run makes.
const churnOps = 200

// churnRuns is PODHOST_CHURN_RUNS (default 1): seeded runs per variant.
func churnRuns() int {
	if n, err := strconv.Atoi(os.Getenv("PODHOST_CHURN_RUNS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// TestRobustChurn: six pods created, edited and deleted, 200 operations,
// each waited for in the API (so podhost is busy creating and tearing down
// while the next comes); with a SIGKILL of podhost after about one
// operation in ten, and without. Then every pod runs exactly once, and once
// all are deleted nothing is left: containers, tasks, active snapshots,
// containerd leases, netns pins, sandbox dirs, IP leases, NAT rules, pod
// cgroups. PODHOST_CHURN_RUNS=<n> runs n seeds per variant;
// PODHOST_CHAOS_SEED=<seed> replays one.
func TestRobustChurn(t *testing.T) {
	for _, kills := range []bool{false, true} {
		for run := 0; run < churnRuns(); run++ {
			t.Run(fmt.Sprintf("kills=%v/%d", kills, run), func(t *testing.T) { churnRun(t, kills) })
		}
	}
}

func churnRun(t *testing.T, kills bool) {
	d := newPodhostd(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PODHOST_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	baseSnaps := snapshotCount(t)
	d.start()
	const pods = 6
	version := make([]int, pods)
	nKills := 0
	start := time.Now()
	for op := 0; op < churnOps; op++ {
		i := rng.IntN(pods)
		name := fmt.Sprintf("c%d", i)
		file := filepath.Join(d.manifestDir, name+".yaml")
		if _, err := os.Stat(file); err == nil && rng.IntN(3) == 0 {
			d.removeManifest(name + ".yaml")
			churnWait(t, d, name, func(uid types.UID) bool { return uid == "" })
		} else {
			old := churnUID(d, name)
			version[i]++
			d.writeManifest(name+".yaml", sleeper(name, 1, fmt.Sprintf("    env: [{name: V, value: \"%d\"}]\n", version[i])))
			churnWait(t, d, name, func(uid types.UID) bool { return uid != "" && uid != old })
		}
		if kills && rng.IntN(10) == 0 {
			d.kill(syscall.SIGKILL)
			nKills++
			d.startNoWait()
		}
	}
	t.Logf("%d operations, %d kills in %v", churnOps, nKills, time.Since(start))
	for i := 0; i < pods; i++ {
		d.writeManifest(fmt.Sprintf("c%d.yaml", i), sleeper(fmt.Sprintf("c%d", i), 1, ""))
	}
	d.waitAllRunning(pods, 90*time.Second)
	sbDir := filepath.Join(runDirOf(d), "sandboxes")
	if err := waitFor(30*time.Second, func() (bool, error) { // housekeeping runs every 2 s
		n, err := countContainers()
		return n == pods && len(leaseOwners(t)) == pods && len(netnsPins(t, d)) == pods && len(dirNames(sbDir)) == pods, err
	}); err != nil {
		n, _ := countContainers()
		t.Fatalf("%d pods: %d containers, leases %v, netns %v, sandboxes %v", pods, n, leaseOwners(t), netnsPins(t, d), dirNames(sbDir))
	}
	for i := 0; i < pods; i++ {
		d.removeManifest(fmt.Sprintf("c%d.yaml", i))
	}
	waitNoContainers(t, d)
	if err := waitFor(20*time.Second, func() (bool, error) {
		return len(mountsUnder(t, runDirOf(d)))+len(leaseOwners(t))+len(podCgroups(d))+len(dirNames(sbDir))+
			len(containerdLeases(t)) == 0 && snapshotCount(t) == baseSnaps, nil
	}); err != nil {
		t.Fatalf("left: mounts %v, IP leases %v, cgroups %v, sandboxes %v, containerd leases %v, active snapshots %d (want %d)\n%s",
			mountsUnder(t, runDirOf(d)), leaseOwners(t), podCgroups(d), dirNames(sbDir), containerdLeases(t),
			snapshotCount(t), baseSnaps, d.logs())
	}
	assertNothingLeft(t, d, baseSnaps)
	assertNoMasquerade(t, nil)
}

// churnUID is pod name's UID in the API ("" if absent or not answering).
func churnUID(d *podhostd, name string) types.UID {
	if p := d.pod(name); p != nil {
		return p.UID
	}
	return ""
}

// churnWait waits until the API shows the operation on pod name (a killed
// podhost answers again once restarted).
func churnWait(t *testing.T, d *podhostd, name string, cond func(types.UID) bool) {
	t.Helper()
	var uid types.UID
	if err := waitFor(30*time.Second, func() (bool, error) {
		uid = churnUID(d, name)
		return cond(uid), nil
	}); err != nil {
		t.Fatalf("pod %s: operation not seen (uid %q)\n%s", name, uid, d.logs())
	}
}

// containerdLeases lists every lease in the suite's containerd namespace
// (ID and labels), straight from containerd.
func containerdLeases(t *testing.T) []string {
	t.Helper()
	return leasesIn(t, env.Context(context.Background()))
}

func leasesIn(t *testing.T, ctx context.Context) []string {
	t.Helper()
	ls, err := env.Client().LeasesService().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprintf("%s%v(%s)", l.ID, l.Labels, l.CreatedAt.Format(time.RFC3339)))
	}
	return out
}

// TestRobustTaskLeftCreated: podhost killed between NewTask and Start
// leaves a task in state created (made here by hand while podhost is
// down). The next podhost removes that container and runs the pod in a new
// one: Running within 30 s, no task left in state created.
func TestRobustTaskLeftCreated(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("p.yaml", sleeper("p", 1, ""))
	p := d.waitRunning("p")
	id := strings.TrimPrefix(containerStatus(p, "main").ContainerID, "containerd://")
	d.kill(syscall.SIGKILL)
	ctx := testCtx(t, time.Minute)
	c, err := env.Client().LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	old, err := c.Task(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Delete(ctx, client.WithProcessKill); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewTask(ctx, cio.NullIO); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.waitPod("p", 30*time.Second, "running in a new container", func(p *corev1.Pod) bool {
		return allRunning(p) && containerStatus(p, "main").ContainerID != "containerd://"+id
	})
	resp, err := env.Client().TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range resp.Tasks {
		if tk.Status == apitask.Status_CREATED || tk.ID == id {
			t.Fatalf("task %s left (status %v)", tk.ID, tk.Status)
		}
	}
}
