package manager

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/podconfig"
	"github.com/podhost/podhost/internal/podworkers"
	"github.com/podhost/podhost/internal/status"
)

// listed is each pod of m.Pods() as "name uid deleting|live phase".
func listed(m *Manager) []string {
	var out []string
	for _, e := range m.Pods() {
		s := e.Pod.Name + " " + string(e.Pod.UID) + " live"
		if e.Pod.DeletionTimestamp != nil {
			s = e.Pod.Name + " " + string(e.Pod.UID) + " deleting"
			if e.Status != nil {
				s += " " + string(e.Status.Phase)
			}
		}
		out = append(out, s)
	}
	return out
}

// A removed pod stays listed, with a deletionTimestamp, its grace period
// and its last status, while its worker has not finished; a pod of the
// same name that replaces it hides it; housekeeping forgets it once the
// worker finished.
func TestRemovedPodListedUntilFinished(t *testing.T) {
	m, w, _, _, _ := newStartedTestManager()
	sm := m.statuses.(*status.Manager)
	ctx := context.Background()
	web, db := hostPortPod("web", "u1", 0), hostPortPod("db", "u2", 0)
	m.handleUpdates(ctx, []podconfig.Update{{Op: podconfig.ADD, Pod: web}, {Op: podconfig.ADD, Pod: db}}, nil)
	sm.SetStatus(web, corev1.PodStatus{Phase: corev1.PodRunning})
	w.known["u1"], w.known["u2"] = podworkers.WorkerState{}, podworkers.WorkerState{}

	m.handleUpdates(ctx, []podconfig.Update{{Op: podconfig.REMOVE, Pod: web}}, nil)
	got := listed(m)
	if len(got) != 2 || got[0] != "db u2 live" || got[1] != "web u1 deleting Running" {
		t.Fatalf("after the removal: %q", got)
	}
	for _, e := range m.Pods() {
		if e.Pod.Name == "web" && (e.Pod.DeletionGracePeriodSeconds == nil || *e.Pod.DeletionGracePeriodSeconds != 30) {
			t.Fatalf("grace period %v, want the default 30", e.Pod.DeletionGracePeriodSeconds)
		}
	}
	if web.DeletionTimestamp != nil {
		t.Fatal("the manager's own pod object was changed")
	}

	// A new pod of the name (a changed manifest) is the one listed.
	web2 := hostPortPod("web", "u3", 0)
	m.handleUpdates(ctx, []podconfig.Update{{Op: podconfig.ADD, Pod: web2}}, nil)
	if got := listed(m); len(got) != 2 || got[1] != "web u3 live" {
		t.Fatalf("with a replacement: %q", got)
	}
	m.handleUpdates(ctx, []podconfig.Update{{Op: podconfig.REMOVE, Pod: web2}}, nil)

	// u1's worker finished: gone from the list at once, and forgotten by
	// housekeeping; u3 (never started a worker here) is not listed.
	w.known["u1"] = podworkers.WorkerState{Finished: true}
	if got := listed(m); len(got) != 1 || got[0] != "db u2 live" {
		t.Fatalf("after the worker finished: %q", got)
	}
	m.housekeeping(ctx)
	if _, ok := m.terminating[types.UID("u1")]; ok || len(m.terminating) != 0 {
		t.Fatalf("housekeeping kept %v", m.terminating)
	}
}
