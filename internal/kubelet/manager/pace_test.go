package manager

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/model/records"
)

func TestFullPassDue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name                 string
		lastFull, lastChange time.Time
		now                  time.Time
		want                 bool
	}{
		{"first pass", time.Time{}, time.Time{}, t0, true},
		{"idle, full pass recent", t0, time.Time{}, t0.Add(2 * time.Second), false},
		{"idle, just under the period", t0, t0.Add(-time.Minute), t0.Add(fullPassPeriod - time.Second), false},
		{"idle, period elapsed", t0, t0.Add(-time.Minute), t0.Add(fullPassPeriod), true},
		{"change after the last full pass", t0, t0.Add(time.Second), t0.Add(2 * time.Second), true},
		{"change seen by the last full pass", t0, t0, t0.Add(2 * time.Second), false},
		{"change before the last full pass", t0, t0.Add(-time.Second), t0.Add(2 * time.Second), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fullPassDue(c.lastFull, c.lastChange, c.now); got != c.want {
				t.Fatalf("fullPassDue = %v, want %v", got, c.want)
			}
		})
	}
}

// TestPaceFullAt: a full pass that left work for later (log GC spaced by
// its period) gets another one when asked, without a change; only once.
func TestPaceFullAt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var p pace
	if !p.fullDue(t0) {
		t.Fatal("first pass not full")
	}
	p.fullAt(t0.Add(10 * time.Second))
	p.fullAt(t0.Add(20 * time.Second)) // a later ask does not push the earlier one back
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{{2 * time.Second, false}, {8 * time.Second, false}, {10 * time.Second, true}, {12 * time.Second, false}, {22 * time.Second, false}} {
		if got := p.fullDue(t0.Add(c.after)); got != c.want {
			t.Fatalf("full pass at +%v = %v, want %v", c.after, got, c.want)
		}
	}
}

func TestSameWorkers(t *testing.T) {
	run := podworkers.WorkerState{State: podworkers.SyncPod, HasConfig: true}
	term := podworkers.WorkerState{State: podworkers.TerminatingPod, HasConfig: true}
	a := map[types.UID]podworkers.WorkerState{"u1": run}
	cases := []struct {
		name string
		b    map[types.UID]podworkers.WorkerState
		want bool
	}{
		{"same", map[types.UID]podworkers.WorkerState{"u1": run}, true},
		{"state changed", map[types.UID]podworkers.WorkerState{"u1": term}, false},
		{"worker added", map[types.UID]podworkers.WorkerState{"u1": run, "u2": run}, false},
		{"worker replaced", map[types.UID]podworkers.WorkerState{"u2": run}, false},
		{"worker gone", map[types.UID]podworkers.WorkerState{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sameWorkers(a, c.b); got != c.want {
				t.Fatalf("sameWorkers = %v, want %v", got, c.want)
			}
		})
	}
}

// An idle pass (nothing changed since the last full pass, which is less
// than fullPassPeriod ago) lists nothing; a worker changing state makes
// the next pass a full one, and only that one.
func TestHousekeepingIdleListsNothing(t *testing.T) {
	m, w, _, rt, _ := newStartedTestManager()
	for _, uid := range []string{"u1", "u2", "u3"} {
		m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: hostPortPod(uid, uid, 0)}}, nil)
		w.known[types.UID(uid)] = podworkers.WorkerState{State: podworkers.SyncPod, HasConfig: true}
	}
	passLists(t, m, rt, 1, "first pass")
	for i := 0; i < 5; i++ {
		passLists(t, m, rt, 1, "idle pass")
	}
	w.known["u2"] = podworkers.WorkerState{State: podworkers.TerminatingPod, HasConfig: true}
	passLists(t, m, rt, 2, "after a worker changed")
	passLists(t, m, rt, 2, "pass after the full one")
	m.pace.changed(time.Now().Add(time.Millisecond)) // a runtime event, as the sync loop records it
	passLists(t, m, rt, 3, "after a runtime event")
	m.pace.lastFull = time.Now().Add(-fullPassPeriod)
	passLists(t, m, rt, 4, "a period after the last full pass")
}

// TestHousekeepingAfterLeakedSandboxIsFull: a full pass that removed a
// leaked sandbox record is followed by another full pass (the pod's
// cgroups, volumes and logs counted as active in the first because of the
// record), then idle passes again.
func TestHousekeepingAfterLeakedSandboxIsFull(t *testing.T) {
	m, _, st, rt, cl := newStartedTestManager()
	st.sandboxes = []records.SandboxRecord{{ID: "sb-gone", PodUID: "gone", FullName: "default/gone"}}
	ctx := context.Background()
	m.housekeeping(ctx)
	if rt.lists != 1 || len(cl.cleaned) != 1 {
		t.Fatalf("first pass: %d lists, cleaned %v", rt.lists, cl.cleaned)
	}
	st.sandboxes = nil // removed by the cleaner
	passLists(t, m, rt, 2, "pass after a leaked sandbox was removed")
	passLists(t, m, rt, 2, "then idle")
}

// TestHousekeepingRetriesAFailedList: a full pass whose runtime list failed
// (containerd restarting) is retried at the next pass, not in a minute.
func TestHousekeepingRetriesAFailedList(t *testing.T) {
	m, _, _, rt, _ := newStartedTestManager()
	rt.listErr = errors.New("containerd: connection refused")
	ctx := context.Background()
	m.housekeeping(ctx)
	rt.listErr = nil
	m.housekeeping(ctx)
	m.housekeeping(ctx)
	if rt.lists != 2 {
		t.Fatalf("%d runtime lists, want 2: the failed one, its retry, then idle", rt.lists)
	}
}

// passLists runs one housekeeping pass and checks the runtime lists made
// so far (what names the pass in the failure).
func passLists(t *testing.T, m *Manager, rt *fakeRuntime, want int, what string) {
	t.Helper()
	m.housekeeping(context.Background())
	if rt.lists != want {
		t.Fatalf("%s: %d runtime lists, want %d", what, rt.lists, want)
	}
}
