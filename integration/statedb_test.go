//go:build integration

package integration

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/ops/recovery"
)

// readyBound is how fast podhost must answer after a start on a damaged or
// missing state db (it rebuilds before the first sync).
const readyBound = 10 * time.Second

// TestRobustStateDBDamaged: with 3 pods running, podhost is SIGKILLed and
// its state.db (a) overwritten with random bytes, (b) cut after its two
// meta pages (every data page lost; a cut elsewhere may only lose free
// pages, which is no damage: TestRobustStateDBTruncations covers those),
// (c) deleted. Each time podhost starts, answers quickly, and adopts every
// pod as it runs: same container IDs and PIDs, same pod IPs, one lease each
// (no second CNI ADD, no new sandbox); the damaged file is kept aside, a
// StateRebuilt event is on every pod and the rebuild is noted for check.
func TestRobustStateDBDamaged(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	names := []string{"sdb-a", "sdb-b", "sdb-c"}
	for _, n := range names {
		d.writeManifest(n+".yaml", sleeper(n, 1, ""))
	}
	before := map[string]*corev1.Pod{}
	pids := map[string]int{}
	for _, n := range names {
		before[n] = d.waitRunning(n)
		pids[n] = containerPID(t, before[n], "main")
	}
	leases := leaseOwners(t)
	dbPath := filepath.Join(d.stateDir, "state.db")
	rng := rand.New(rand.NewPCG(13, 1))
	for _, tc := range []struct {
		name    string
		damage  func() error
		damaged bool // a damaged copy must be kept aside
	}{
		{"random bytes", func() error {
			fi, err := os.Stat(dbPath)
			if err != nil {
				return err
			}
			b := make([]byte, fi.Size())
			for i := range b {
				b[i] = byte(rng.UintN(256))
			}
			return os.WriteFile(dbPath, b, 0o600)
		}, true},
		{"cut after the meta pages", func() error {
			// bbolt's page size is the OS page size; pages 0 and 1 are meta.
			return os.Truncate(dbPath, int64(2*os.Getpagesize()))
		}, true},
		{"deleted", func() error { return os.Remove(dbPath) }, false},
	} {
		t.Logf("case %s", tc.name)
		d.kill(syscall.SIGKILL)
		copies, _ := state.DamagedCopies(dbPath)
		_ = os.Remove(state.NotePath(dbPath))
		if err := tc.damage(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		logFrom := d.logMark()
		start := time.Now()
		d.startNoWait()
		d.waitReady(readyBound)
		t.Logf("%s: ready %v after start", tc.name, time.Since(start))
		for _, n := range names {
			p := d.waitPod(n, 2*time.Second, "adopted", allRunning)
			cs, old := p.Status.ContainerStatuses[0], before[n].Status.ContainerStatuses[0]
			if cs.ContainerID != old.ContainerID || cs.RestartCount != 0 || p.Status.PodIP != before[n].Status.PodIP {
				t.Fatalf("%s: %s not adopted: %s, was %s", tc.name, n, statusSummary(p), statusSummary(before[n]))
			}
			assertTaskPID(t, p, "main", pids[n])
			if desc := d.mustCLI("describe", "pod", n); !strings.Contains(desc, recovery.EventReason) {
				t.Fatalf("%s: describe %s lacks %s:\n%s", tc.name, n, recovery.EventReason, desc)
			}
		}
		assertSameStrings(t, tc.name+": leases", keys(leases), keys(leaseOwners(t)))
		log := d.logsSince(logFrom)
		if !strings.Contains(log, "state rebuilt from the running containers") || strings.Contains(log, "sandbox ready") {
			t.Fatalf("%s: want a rebuild and no new sandbox in the log:\n%s", tc.name, log)
		}
		now, _ := state.DamagedCopies(dbPath)
		if tc.damaged && len(now) != len(copies)+1 {
			t.Fatalf("%s: damaged copies %v, were %v", tc.name, now, copies)
		}
		if !tc.damaged && len(now) != len(copies) {
			t.Fatalf("%s: damaged copies %v, were %v", tc.name, now, copies)
		}
		note, err := state.ReadNote(dbPath)
		if err != nil || note == nil || note.Adopted != len(names) || (tc.damaged && note.DamagedCopy != now[len(now)-1]) {
			t.Fatalf("%s: recovery note %+v, %v", tc.name, note, err)
		}
	}
}

// TestRobustStateDBTruncations: a populated state.db cut at 20 seeded random
// offsets (what a power loss can leave), podhost started on each: it always
// answers and adopts the running pods with the same containers and IPs.
func TestRobustStateDBTruncations(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	names := []string{"cut-a", "cut-b"}
	for _, n := range names {
		d.writeManifest(n+".yaml", sleeper(n, 1, ""))
	}
	before := map[string]*corev1.Pod{}
	for _, n := range names {
		before[n] = d.waitRunning(n)
	}
	dbPath := filepath.Join(d.stateDir, "state.db")
	d.kill(syscall.SIGKILL)
	good, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20, 26))
	for i := range 20 {
		off := rng.IntN(len(good))
		if err := os.WriteFile(dbPath, good[:off], 0o600); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		d.startNoWait()
		d.waitReady(readyBound)
		for _, n := range names {
			p := d.waitPod(n, 2*time.Second, "adopted", allRunning)
			if p.Status.ContainerStatuses[0].ContainerID != before[n].Status.ContainerStatuses[0].ContainerID ||
				p.Status.PodIP != before[n].Status.PodIP {
				t.Fatalf("cut %d at %d of %d bytes: %s not adopted: %s, was %s", i, off, len(good), n, statusSummary(p), statusSummary(before[n]))
			}
		}
		t.Logf("cut %d at byte %d of %d: ready and adopted in %v", i, off, len(good), time.Since(start))
		d.kill(syscall.SIGKILL)
	}
	d.start() // the test's cleanup tears the pods down through it
}
