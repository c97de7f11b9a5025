//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/host/fsquota"
	"github.com/podhost/podhost/internal/host/statedir"
	"github.com/podhost/podhost/internal/host/volumes"
)

// TestEvictionEmptyDirProjectQuota: with the state dir on ext4 mounted
// prjquota, the disk emptyDir of a pod with hostUsers: false gets a
// project ID of its own (FirstID or above, PROJINHERIT, read from the host
// with the ioctl), the files written below carry it, the kernel's quota
// counts them, and the pod writing past the emptyDir's sizeLimit is
// evicted as before, measured by that quota (the daemon says so at debug).
func TestEvictionEmptyDirProjectQuota(t *testing.T) {
	mnt := prjquotaMount(t, "256M")
	d := newPodhostd(t)
	d.stateDir = filepath.Join(mnt, "state")
	setEvictionHard(t, d, "{}")
	appendConfig(t, d, "evictionMonitoringPeriod: 1s\n")
	d.start()
	// Only pods in their own user namespace get project IDs (the
	// kubelet's rule); a kernel that has quotas but cannot run them (no
	// idmapped mounts on tmpfs before Linux 6.3) cannot run this test.
	if i := strings.Index(d.logs(), "pods with hostUsers: false will be refused"); i >= 0 {
		t.Skipf("this kernel cannot run pods with hostUsers: false: %s", strings.SplitN(d.logs()[i:], "\n", 2)[0])
	}
	// The writer waits for /scratch/go, so that the directory's ID is
	// read before the pod is evicted and its volume removed.
	d.writeManifest("quota.yaml", podManifest("quota", `  hostUsers: false
  terminationGracePeriodSeconds: 30
  containers:
  - name: writer
    image: `+env.ImageRef+`
    command: ["sh", "-c", "trap 'exit 0' TERM; until [ -e /scratch/go ]; do sleep 0.2; done; dd if=/dev/zero of=/scratch/big bs=1M count=8 && while true; do sleep 1; done"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: scratch
    emptyDir: {sizeLimit: 2Mi}
`))
	p := d.waitPod("quota", evictionDeadline, "running", allRunning)
	dir := volumes.New(statedir.PodsDir(d.stateDir)).EmptyDir(p.UID, "scratch")
	k := fsquota.System{}
	id, inherit, err := k.Project(dir)
	if err != nil || id < fsquota.FirstID || !inherit {
		t.Fatalf("emptyDir %s: project ID %d, PROJINHERIT %v, %v; want an ID from %d inherited", dir, id, inherit, err, fsquota.FirstID)
	}
	if !strings.Contains(d.logs(), "emptyDir measured by project quota") {
		t.Errorf("the daemon did not say the emptyDir is measured by its project quota:\n%s", d.logs())
	}
	checkEmptyDirMethods(t, d, 1)
	goFile := filepath.Join(dir, "go")
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := runCmd(t, "lsattr", "-p", goFile); !strings.HasPrefix(strings.TrimSpace(got), strconv.FormatUint(uint64(id), 10)+" ") {
		t.Errorf("lsattr -p %s = %q; want project %d inherited", goFile, got, id)
	}
	msg := `Usage of EmptyDir volume "scratch" exceeds the limit "2Mi". `
	d.waitPod("quota", evictionDeadline, "evicted", evicted(msg))
	d.waitEvent("quota", "Evicted", msg, evictionDeadline)
	if strings.Contains(d.logs(), "project quota not read, walking") {
		t.Errorf("the eviction manager walked the emptyDir:\n%s", d.logs())
	}
	// Until the volume goes, the quota counts what the writer wrote.
	if b, _, err := k.Usage(mnt, id); err == nil && b != 0 && b < 8<<20 {
		t.Errorf("project %d uses %d bytes; want at least the 8 MiB written (or nothing: volume removed)", id, b)
	}
}

// checkEmptyDirMethods: the daemon said at debug how each of the n disk
// emptyDirs set up is measured, and podhost_emptydir_project_quotas counts
// those measured by their project quota.
func checkEmptyDirMethods(t *testing.T, d *podhostd, n int) {
	t.Helper()
	logs := d.logsSince(0) // whole: logs() keeps the tail
	quota := strings.Count(logs, "emptyDir measured by project quota")
	if said := quota + strings.Count(logs, "emptyDir measured by walking"); said != n {
		t.Errorf("the daemon said how %d emptyDirs are measured, want %d:\n%s", said, n, logs)
	}
	if v, ok := metricValue(d.scrapeMetrics(""), "podhost_emptydir_project_quotas", nil); !ok || v != float64(quota) {
		t.Errorf("podhost_emptydir_project_quotas = %v (found %v), want %d", v, ok, quota)
	}
}
