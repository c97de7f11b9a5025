package manager

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/status"
	"github.com/podhost/podhost/internal/model/wellknown"
)

func afterPod(name, uid, after string) *corev1.Pod {
	p := hostPortPod(name, uid, 0)
	p.Spec.Containers[0].Ports = nil
	if after != "" {
		p.Annotations = map[string]string{wellknown.AnnotationAfter: after}
	}
	return p
}

func readyStatus(ready corev1.ConditionStatus) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}
}

// updates renders the worker updates as "create:name kill:name".
func updates(w *fakeWorkers) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, u := range w.updates {
		op := map[podworkers.UpdateType]string{podworkers.SyncPodCreate: "create", podworkers.SyncPodKill: "kill", podworkers.SyncPodUpdate: "update"}[u.Type]
		out = append(out, op+":"+u.Pod.Name)
	}
	return strings.Join(out, " ")
}

func TestAfterWaitsForReady(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	sm := m.statuses.(*status.Manager)
	db, app, plain := afterPod("db", "u-db", ""), afterPod("app", "u-app", "db"), afterPod("plain", "u-plain", "")
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: app}, {Op: podset.ADD, Pod: db}, {Op: podset.ADD, Pod: plain}}, nil)
	if got := updates(w); got != "create:db create:plain" {
		t.Fatalf("updates = %q; app must wait, the others start at once", got)
	}
	if waiting, _ := m.orderPending(); !waiting {
		t.Fatal("app not waiting")
	}
	var appStatus corev1.PodStatus
	for _, e := range m.Pods() {
		if e.Pod.Name == "app" && e.Status != nil {
			appStatus = *e.Status
		}
	}
	if appStatus.Phase != corev1.PodPending || appStatus.Reason != ReasonWaitingForDependencies || appStatus.Message != "waiting for pods to be Ready: db" {
		t.Fatalf("app status = %+v", appStatus)
	}
	sm.SetStatus(db, readyStatus(corev1.ConditionFalse))
	m.releaseWaiting(context.Background())
	if got := updates(w); got != "create:db create:plain" {
		t.Fatalf("app started before db is Ready: %q", got)
	}
	sm.SetStatus(db, readyStatus(corev1.ConditionTrue))
	m.releaseWaiting(context.Background())
	if got := updates(w); got != "create:db create:plain create:app" || !m.IsDesired("u-app") {
		t.Fatalf("after db Ready: %q, app desired %v", got, m.IsDesired("u-app"))
	}
}

func TestAfterMissingDependencyWaits(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: afterPod("app", "u-app", "db")}}, nil)
	if got := updates(w); got != "" {
		t.Fatalf("updates = %q", got)
	}
	if msg := m.Pods()[0].Status.Message; msg != "waiting for pods to be Ready: db (not found)" {
		t.Fatalf("message = %q", msg)
	}
	// Removing a waiting pod sends no kill: it never started.
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.REMOVE, Pod: afterPod("app", "u-app", "db")}}, nil)
	if got := updates(w); got != "" || len(m.Pods()) != 0 {
		t.Fatalf("updates = %q, pods %d", got, len(m.Pods()))
	}
}

// Pods admitted before a restart ran already: they do not wait again.
func TestAfterPrevAdmittedDoesNotWait(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: afterPod("app", "u-app", "db")}}, map[types.UID]bool{"u-app": true})
	if got := updates(w); got != "create:app" {
		t.Fatalf("updates = %q", got)
	}
}

func TestRemoveKillsDependantsFirst(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	db, cache, app := afterPod("db", "u-db", ""), afterPod("cache", "u-cache", "db"), afterPod("app", "u-app", "db,cache")
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: db}, {Op: podset.ADD, Pod: cache}, {Op: podset.ADD, Pod: app}}, map[types.UID]bool{"u-db": true, "u-cache": true, "u-app": true})
	w.updates = nil
	w.terminating = map[types.UID]bool{}
	w.terminated = map[types.UID]bool{}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.REMOVE, Pod: db}, {Op: podset.REMOVE, Pod: cache}, {Op: podset.REMOVE, Pod: app}}, nil)
	if got := updates(w); got != "kill:app" {
		t.Fatalf("updates = %q, want only app killed first", got)
	}
	w.terminating["u-app"] = true
	m.processPendingKills()
	if got := updates(w); got != "kill:app" {
		t.Fatalf("killed before app terminated: %q", got)
	}
	w.terminated["u-app"] = true
	m.processPendingKills()
	if got := updates(w); got != "kill:app kill:cache" {
		t.Fatalf("after app terminated: %q", got)
	}
	w.terminating["u-cache"] = true
	w.terminated["u-cache"] = true
	m.processPendingKills()
	if got := updates(w); got != "kill:app kill:cache kill:db" {
		t.Fatalf("after cache terminated: %q", got)
	}
	if _, kills := m.orderPending(); kills {
		t.Fatal("kills still pending")
	}
}

// A pod replaced in the same snapshot is killed at once: its successor
// must not start next to it.
func TestRemoveReplacedDependencyKilledAtOnce(t *testing.T) {
	m, w, _, _, _ := newTestManager()
	db, app := afterPod("db", "u-db", ""), afterPod("app", "u-app", "db")
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: db}, {Op: podset.ADD, Pod: app}}, map[types.UID]bool{"u-db": true, "u-app": true})
	w.updates = nil
	db2 := afterPod("db", "u-db2", "")
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.REMOVE, Pod: db}, {Op: podset.REMOVE, Pod: app}, {Op: podset.ADD, Pod: db2}}, nil)
	if got := updates(w); got != "kill:app kill:db create:db" {
		t.Fatalf("updates = %q", got)
	}
}

// A pod whose kill waits for its dependants and that is applied again
// (same UID: delete -f then apply -f of a stack) is not killed once they
// terminate: its worker never stopped, its run goes on.
func TestReappliedPodKeepsRunningPastItsDeferredKill(t *testing.T) {
	m, w, st, _, _ := newTestManager()
	db, app := afterPod("db", "u-db", ""), afterPod("app", "u-app", "db")
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: db}, {Op: podset.ADD, Pod: app}}, map[types.UID]bool{"u-db": true, "u-app": true})
	w.updates = nil
	w.terminating = map[types.UID]bool{}
	w.terminated = map[types.UID]bool{}
	w.known = map[types.UID]podworkers.WorkerState{"u-db": {}, "u-app": {}}
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.REMOVE, Pod: db}, {Op: podset.REMOVE, Pod: app}}, nil)
	st.statuses["u-db"] = corev1.PodStatus{Phase: corev1.PodRunning} // its run, flushed
	m.handleUpdates(context.Background(), []podset.Update{{Op: podset.ADD, Pod: db}}, nil)
	w.terminating["u-app"], w.terminated["u-app"] = true, true
	m.processPendingKills()
	if got := updates(w); got != "kill:app create:db" {
		t.Fatalf("updates = %q, want db's deferred kill dropped", got)
	}
	if !m.IsDesired("u-db") || slices.Contains(st.purged, "u-db") {
		t.Fatalf("db desired %v, purged %v: want its run to go on with its records", m.IsDesired("u-db"), st.purged)
	}
	if _, kills := m.orderPending(); kills {
		t.Fatal("kills still pending")
	}
}
