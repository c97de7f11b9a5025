package manager

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/status"
)

// listed is each pod of m.Pods() as "name uid live|deleting".
func listed(m *Manager) []string {
	var out []string
	for _, e := range m.Pods() {
		s := e.Pod.Name + " " + string(e.Pod.UID) + " live"
		if e.Pod.DeletionTimestamp != nil {
			s = e.Pod.Name + " " + string(e.Pod.UID) + " deleting"
		}
		out = append(out, s)
	}
	return out
}

func equal(a []string, b ...string) bool { return slices.Equal(a, b) }

// A removed pod stays listed, with a deletionTimestamp and its grace
// period, its status still tracked and updated, while its worker has not
// finished; WorkerFinished ends both.
func TestRemovedPodListedUntilFinished(t *testing.T) {
	m, w, _, _, _ := newStartedTestManager()
	sm := m.statuses.(*status.Manager)
	ctx := context.Background()
	web, db := hostPortPod("web", "u1", 0), hostPortPod("db", "u2", 0)
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: web}, {Op: podset.ADD, Pod: db}}, nil)
	sm.SetStatus(web, corev1.PodStatus{Phase: corev1.PodRunning})
	w.known["u1"], w.known["u2"] = podworkers.WorkerState{}, podworkers.WorkerState{}

	m.handleUpdates(ctx, []podset.Update{{Op: podset.REMOVE, Pod: web}}, nil)
	if got := listed(m); !equal(got, "db u2 live", "web u1 deleting") {
		t.Fatalf("after the removal: %q", got)
	}
	for _, e := range m.Pods() {
		if e.Pod.Name == "web" && (e.Status != nil || *e.Pod.DeletionGracePeriodSeconds != 30) {
			t.Fatalf("entry %+v: want the status manager's status and the default grace period 30", e)
		}
	}
	if web.DeletionTimestamp != nil {
		t.Fatal("the manager's own pod object was changed")
	}
	sm.SetStatus(web, corev1.PodStatus{Phase: corev1.PodFailed}) // its containers were killed
	if st, ok := sm.Status("u1"); !ok || st.Phase != corev1.PodFailed || sm.IsDesired("u1") {
		t.Fatalf("status while terminating: %v %v, desired %v; want Failed, not desired", st.Phase, ok, sm.IsDesired("u1"))
	}

	m.WorkerFinished("u1")
	if got := listed(m); !equal(got, "db u2 live") {
		t.Fatalf("after the worker finished: %q", got)
	}
	if _, ok := sm.Status("u1"); ok {
		t.Fatal("status kept after the worker finished")
	}
}

// One pod per name: a replacement hides the removed pod; of two removed
// pods of a name, the later is shown, then the earlier while it runs on.
func TestTerminatingOnePerName(t *testing.T) {
	m, w, _, _, _ := newStartedTestManager()
	ctx := context.Background()
	web1 := hostPortPod("web", "u1", 0)
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: web1}}, nil)
	w.known["u1"] = podworkers.WorkerState{}
	web2 := hostPortPod("web", "u2", 0)
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: web2}, {Op: podset.REMOVE, Pod: web1}}, nil)
	w.known["u2"] = podworkers.WorkerState{}
	if got := listed(m); !equal(got, "web u2 live") {
		t.Fatalf("with a replacement: %q", got)
	}
	time.Sleep(time.Millisecond) // a later deletionTimestamp, not a wait
	m.handleUpdates(ctx, []podset.Update{{Op: podset.REMOVE, Pod: web2}}, nil)
	if got := listed(m); !equal(got, "web u2 deleting") {
		t.Fatalf("both removed: %q", got)
	}
	m.WorkerFinished("u2")
	if got := listed(m); !equal(got, "web u1 deleting") {
		t.Fatalf("the later finished: %q", got)
	}
	w.known["u1"] = podworkers.WorkerState{Finished: true}
	m.housekeeping(ctx)
	if got := listed(m); len(got) != 0 || len(m.terminating.uids()) != 0 {
		t.Fatalf("after housekeeping: %q, kept %v", got, m.terminating.uids())
	}
	if m.terminating.has(types.UID("u1")) {
		t.Fatal("u1 kept")
	}
}

// Applied again (same UID) while it stops, the pod is listed live and
// keeps its status when the old worker finishes; a pod waiting for its
// dependencies has no status of the status manager's, so its stopping
// status goes.
func TestReappliedWhileStopping(t *testing.T) {
	m, w, _, _, _ := newStartedTestManager()
	sm := m.statuses.(*status.Manager)
	ctx := context.Background()
	web := hostPortPod("web", "u1", 0)
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: web}}, nil)
	w.known["u1"] = podworkers.WorkerState{}
	m.handleUpdates(ctx, []podset.Update{{Op: podset.REMOVE, Pod: web}}, nil)
	m.handleUpdates(ctx, []podset.Update{{Op: podset.ADD, Pod: web}}, nil)
	if got := listed(m); !equal(got, "web u1 live") {
		t.Fatalf("applied again: %q", got)
	}
	sm.SetStatus(web, corev1.PodStatus{Phase: corev1.PodRunning})
	m.WorkerFinished("u1")
	if _, ok := sm.Status("u1"); !ok || !sm.IsDesired("u1") {
		t.Fatal("the re-applied pod lost its status when the old worker finished")
	}

	m.terminating.add(hostPortPod("db", "u2", 0), time.Now())
	m.holds.hold(hostPortPod("db", "u2", 0), time.Now())
	sm.AddPod(hostPortPod("db", "u2", 0))
	sm.MarkTerminating("u2")
	sm.SetStatus(hostPortPod("db", "u2", 0), corev1.PodStatus{Phase: corev1.PodFailed})
	if _, ok := sm.Status("u2"); !ok {
		t.Fatal("setup: no stopping status")
	}
	m.WorkerFinished("u2")
	if _, ok := sm.Status("u2"); ok {
		t.Fatal("a waiting pod kept the stopping run's status")
	}
}
