package rollout

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// fakeStatuses is the status manager as the controller sees it.
type fakeStatuses struct {
	mu       sync.Mutex
	statuses map[types.UID]corev1.PodStatus
	events   map[types.UID][]string // "reason: message"
}

func newFakeStatuses() *fakeStatuses {
	return &fakeStatuses{statuses: map[types.UID]corev1.PodStatus{}, events: map[types.UID][]string{}}
}

func (f *fakeStatuses) Status(uid types.UID) (corev1.PodStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[uid]
	return st, ok
}

func (f *fakeStatuses) Event(uid types.UID, _, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events[uid] = append(f.events[uid], reason+": "+message)
}

func (f *fakeStatuses) Changed() <-chan struct{} { return make(chan struct{}) }

func (f *fakeStatuses) set(uid types.UID, ready bool, waitingReason string) {
	st := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}
	if ready {
		st.Conditions[0].Status = corev1.ConditionTrue
	}
	if waitingReason != "" {
		st.ContainerStatuses = []corev1.ContainerStatus{waiting("app", waitingReason, "")}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[uid] = st
}

type fakeMetrics struct{ got []string }

func (m *fakeMetrics) ObserveRollback(trigger, reason string) {
	m.got = append(m.got, trigger+"/"+reason)
}

// world is one controller over a real state db, with a fake clock.
type world struct {
	t   *testing.T
	db  *state.DB
	st  *fakeStatuses
	m   *fakeMetrics
	now time.Time
	c   *Controller
}

func newTestWorld(t *testing.T, window time.Duration) *world {
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	w := &world{t: t, db: db, st: newFakeStatuses(), m: &fakeMetrics{}, now: time.Unix(1700000000, 0)}
	w.restart(window)
	return w
}

// restart builds a new controller over the same db (a podhost restart).
func (w *world) restart(window time.Duration) {
	w.c = New(w.st, w.db, Options{DefaultWindow: window, Metrics: w.m, Now: func() time.Time { return w.now }})
}

// pod decodes a pod manifest with image and annotations.
func (w *world) pod(name, image string, annotations string) *corev1.Pod {
	doc := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n%s\nspec:\n  containers:\n  - name: app\n    image: %s\n",
		name, annotations, image)
	pods, err := manifest.Decode("/m/"+name+".yaml", []byte(doc))
	if err != nil {
		w.t.Fatal(err)
	}
	return pods[0]
}

// apply feeds a snapshot of pods and returns the view.
func (w *world) apply(pods ...*corev1.Pod) []*corev1.Pod {
	w.c.observe(source.Snapshot{Pods: pods})
	return w.view()
}

func (w *world) view() []*corev1.Pod {
	v, ok := w.c.View()
	if !ok {
		w.t.Fatal("no view")
	}
	return v.Pods
}

func (w *world) tick(d time.Duration) bool {
	w.now = w.now.Add(d)
	emit, _, _ := w.c.check()
	return emit
}

func TestRollBackAfterWindow(t *testing.T) {
	w := newTestWorld(t, 0)
	v1 := w.pod("web", "nginx:1", "  annotations: {podhost.io/rollback-after: 5s}")
	w.apply(v1)
	w.st.set(v1.UID, true, "")
	w.tick(time.Second)
	v2 := w.pod("web", "nginx:nope", "  annotations: {podhost.io/rollback-after: 5s}")
	if got := w.apply(v2); got[0].UID != v2.UID {
		t.Fatalf("new version not passed on: %s", got[0].UID)
	}
	w.st.set(v2.UID, false, "ImagePullBackOff")
	if w.tick(4 * time.Second) {
		t.Fatal("rolled back inside the window")
	}
	if !w.tick(time.Second) {
		t.Fatal("not rolled back at the end of the window")
	}
	got := w.view()[0]
	if got.UID != v1.UID || got.Spec.Containers[0].Image != "nginx:1" {
		t.Fatalf("view runs %s (%s), want the previous version %s", got.UID, got.Spec.Containers[0].Image, v1.UID)
	}
	if got.Annotations[wellknown.AnnotationRolledBackFrom] != manifest.Hash(v2) ||
		!strings.HasPrefix(got.Annotations[wellknown.AnnotationRolledBackReason], "ImagePullBackOff: not Ready within 5s") {
		t.Fatalf("rolled-back annotations: %v", got.Annotations)
	}
	if ev := w.st.events[v2.UID]; len(ev) != 1 || !strings.Contains(ev[0], "rolling back to revision 1") {
		t.Fatalf("events of the failed version: %v", ev)
	}
	if len(w.st.events[v1.UID]) != 0 {
		t.Fatal("event on the restored version before it is tracked again")
	}
	delete(w.st.statuses, v1.UID) // removed while v2 ran; tracked again once the manager adds it
	w.st.set(v1.UID, false, "")
	w.tick(0)
	if ev := w.st.events[v1.UID]; len(ev) != 1 || !strings.Contains(ev[0], "brought back in place of revision 2") {
		t.Fatalf("events of the restored version: %v", ev)
	}
	if len(w.m.got) != 1 || w.m.got[0] != "auto/ImagePullBackOff" {
		t.Fatalf("metrics: %v", w.m.got)
	}

	// The same snapshot again (a relist) keeps the rollback.
	if got := w.apply(v2); got[0].UID != v1.UID {
		t.Fatal("the failed version is tried again without a file change")
	}
	// A podhost restart keeps it too.
	w.restart(0)
	if got := w.apply(v2); got[0].UID != v1.UID {
		t.Fatal("after a restart the failed version runs again")
	}
	h, err := w.c.History("default", "web")
	if err != nil || len(h) != 2 || h[0].Outcome != OutcomeReady || !h[0].Running || h[1].Outcome != OutcomeRolledBack || h[1].Running {
		t.Fatalf("history = %+v, %v", h, err)
	}

	// A further edit is tried.
	v3 := w.pod("web", "nginx:3", "  annotations: {podhost.io/rollback-after: 5s}")
	if got := w.apply(v3); got[0].UID != v3.UID {
		t.Fatal("a further edit is not tried")
	}
	w.st.set(v3.UID, true, "")
	if w.tick(time.Minute) {
		t.Fatal("a Ready version rolled back")
	}
	if h, _ := w.c.History("default", "web"); h[2].Outcome != OutcomeReady || h[2].Revision != 3 {
		t.Fatalf("history after a good edit: %+v", h)
	}
}

func TestWindowContinuesAfterRestart(t *testing.T) {
	w := newTestWorld(t, 10*time.Second) // the daemon's default
	v1 := w.pod("web", "nginx:1", "")
	w.apply(v1)
	w.st.set(v1.UID, true, "")
	w.tick(0)
	v2 := w.pod("web", "nginx:2", "")
	w.apply(v2)
	w.tick(6 * time.Second)
	w.restart(10 * time.Second)
	w.apply(v2)
	w.st.set(v2.UID, false, "CrashLoopBackOff")
	if w.tick(3 * time.Second) {
		t.Fatal("window restarted shorter than configured")
	}
	if !w.tick(time.Second) {
		t.Fatal("the window did not continue across the restart")
	}
	if got := w.view()[0]; got.UID != v1.UID {
		t.Fatalf("runs %s after rollback", got.UID)
	}
}

// TestReadyRacingTheEdit: the previous version turned Ready just before
// the edit, and the edit is seen first: it still counts as Ready.
func TestReadyRacingTheEdit(t *testing.T) {
	w := newTestWorld(t, time.Second)
	v1 := w.pod("web", "nginx:1", "")
	w.apply(v1)
	w.st.set(v1.UID, true, "")
	v2 := w.pod("web", "nginx:2", "")
	w.apply(v2)
	if !w.tick(time.Second) || w.view()[0].UID != v1.UID {
		t.Fatal("not rolled back to a version that was Ready when the edit came")
	}
}

func TestNoRollback(t *testing.T) {
	cases := []struct {
		name    string
		window  time.Duration
		annot   string
		v1Ready bool
	}{
		{"no window", 0, "", true},
		{"annotation turns the default off", time.Second, "  annotations: {podhost.io/rollback-after: \"0\"}", true},
		{"previous never Ready", time.Second, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newTestWorld(t, tc.window)
			v1 := w.pod("web", "nginx:1", "")
			w.apply(v1)
			w.st.set(v1.UID, tc.v1Ready, "")
			w.tick(0)
			v2 := w.pod("web", "nginx:2", tc.annot)
			w.apply(v2)
			w.st.set(v2.UID, false, "CrashLoopBackOff")
			if w.tick(time.Hour) || w.view()[0].UID != v2.UID {
				t.Fatal("rolled back")
			}
		})
	}
}

func TestUndoAndForget(t *testing.T) {
	w := newTestWorld(t, 0)
	v1 := w.pod("web", "nginx:1", "")
	other := w.pod("db", "postgres:1", "")
	w.apply(v1, other)
	w.st.set(v1.UID, true, "")
	w.tick(0)
	if _, err := w.c.Undo("default", "web"); err == nil {
		t.Fatal("undo without an earlier revision: want an error")
	}
	v2 := w.pod("web", "nginx:2", "")
	w.apply(v2, other)
	n, err := w.c.Undo("default", "web")
	if err != nil || n != 1 {
		t.Fatalf("Undo = %d, %v", n, err)
	}
	if got := w.view(); got[0].UID != v1.UID || got[1].UID != other.UID {
		t.Fatalf("after undo the view runs %s, %s", got[0].UID, got[1].UID)
	}
	if len(w.m.got) != 1 || w.m.got[0] != "undo/RolloutUndo" {
		t.Fatalf("metrics: %v", w.m.got)
	}
	// Undo skips a version that was never Ready: v3 (Ready) → v1, not v2.
	v3 := w.pod("web", "nginx:3", "")
	w.apply(v3, other)
	w.st.set(v3.UID, true, "")
	w.tick(0)
	if h, _ := w.c.History("default", "web"); h[1].Outcome != OutcomeUndone || h[2].Outcome != OutcomeReady || !h[2].Running {
		t.Fatalf("history before the second undo: %+v", h)
	}
	if n, err := w.c.Undo("default", "web"); err != nil || n != 1 {
		t.Fatalf("Undo from a Ready v3 = %d, %v; want revision 1 (v2 never was Ready)", n, err)
	}
	if _, err := w.c.Undo("default", "nope"); err == nil {
		t.Fatal("undo of an unknown pod: want an error")
	}
	// The file removed: its history goes.
	w.apply(other)
	if _, err := w.c.History("default", "web"); err == nil {
		t.Fatal("history of a removed pod kept")
	}
	recs, _ := w.db.ListRollouts()
	if len(recs) != 1 || recs[0].FullName != "default/db" {
		t.Fatalf("stored histories: %+v", recs)
	}
}

func TestTrimKeepsLastReady(t *testing.T) {
	revs := []records.Revision{{Number: 1, Ready: true}, {Number: 2}, {Number: 3}, {Number: 4}}
	got := trim(revs, 2)
	var nums []int
	for _, r := range got {
		nums = append(nums, r.Number)
	}
	if fmt.Sprint(nums) != "[1 3 4]" {
		t.Fatalf("trim = %v, want [1 3 4]", nums)
	}
}

// countingStore counts the commits the controller asks of the store.
type countingStore struct {
	*state.DB
	commits int
}

func (s *countingStore) UpdateRollouts(put []records.RolloutRecord, del []string) error {
	s.commits++
	return s.DB.UpdateRollouts(put, del)
}

// A snapshot of many new pods, their turning Ready, and their removal are
// one commit each, not one per pod (podhost's first start with many
// manifests waited on a commit per pod before the first pod was added).
func TestManyPodsOneCommit(t *testing.T) {
	w := newTestWorld(t, time.Minute)
	store := &countingStore{DB: w.db}
	w.c = New(w.st, store, Options{DefaultWindow: time.Minute, Now: func() time.Time { return w.now }})
	var pods []*corev1.Pod
	for i := range 50 {
		pods = append(pods, w.pod(fmt.Sprintf("p%d", i), "img:1", ""))
	}
	w.apply(pods...)
	if store.commits != 1 {
		t.Fatalf("observing 50 new pods: %d commits, want 1", store.commits)
	}
	for _, p := range pods {
		w.st.set(p.UID, true, "")
	}
	w.tick(time.Second)
	if store.commits != 2 {
		t.Fatalf("50 pods turning Ready: %d commits in all, want 2", store.commits)
	}
	w.tick(time.Second)
	w.apply()
	if store.commits != 3 {
		t.Fatalf("a pass with nothing to write, then 50 pods removed: %d commits in all, want 3", store.commits)
	}
	if recs, err := w.db.ListRollouts(); err != nil || len(recs) != 0 {
		t.Fatalf("histories after every pod went: %d, %v", len(recs), err)
	}
	w.restart(time.Minute)
	if _, err := w.c.History("default", "p0"); err == nil {
		t.Fatal("a removed pod's history came back after a restart")
	}
}
