package podcache

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podhost/podhost/internal/model/podstate"
)

// fakeRuntime holds container IDs by pod and counts how it was read.
type fakeRuntime struct {
	during func() // called inside each read, as if the runtime changed meanwhile
	pods   map[types.UID][]string
	lists  map[types.UID]int // ListPod
	byID   map[types.UID]int // PodContainers
	full   int               // ListPods
}

func newFake(pods map[types.UID][]string) *fakeRuntime {
	return &fakeRuntime{pods: pods, lists: map[types.UID]int{}, byID: map[types.UID]int{}}
}

func (f *fakeRuntime) pod(uid types.UID, keep func(string) bool) *podstate.Pod {
	p := &podstate.Pod{UID: uid}
	for _, id := range f.pods[uid] {
		if keep(id) {
			p.Containers = append(p.Containers, &podstate.Container{ID: id})
		}
	}
	return p
}

func (f *fakeRuntime) ListPod(_ context.Context, uid types.UID) (*podstate.Pod, error) {
	f.lists[uid]++
	return f.pod(uid, func(string) bool { return true }), nil
}

func (f *fakeRuntime) PodContainers(_ context.Context, uid types.UID, ids []string) (*podstate.Pod, error) {
	f.byID[uid]++
	if f.during != nil {
		f.during()
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	return f.pod(uid, func(id string) bool { return want[id] }), nil
}

func (f *fakeRuntime) ListPods(context.Context) ([]*podstate.Pod, error) {
	f.full++
	var out []*podstate.Pod
	for uid := range f.pods {
		out = append(out, f.pod(uid, func(string) bool { return true }))
	}
	return out, nil
}

// listed returns a cache whose complete list at t0 had pod a with a-1, over
// a runtime where a has runtime, and the cache's clock (at t0 + 1s).
func listed(t0 time.Time, runtime ...string) (*Cache, *fakeRuntime, *clocktesting.FakePassiveClock) {
	rt := newFake(map[types.UID][]string{"a": runtime})
	clk := clocktesting.NewFakePassiveClock(t0)
	c := New(rt, clk)
	c.SetAll([]*podstate.Pod{{UID: "a", Containers: []*podstate.Container{{ID: "a-1"}}}}, t0)
	clk.SetTime(t0.Add(time.Second))
	return c, rt, clk
}

func ids(p *podstate.Pod) []string {
	out := []string{}
	for _, c := range p.Containers {
		out = append(out, c.ID)
	}
	sort.Strings(out)
	return out
}

func TestGetNewerThan(t *testing.T) {
	t0 := time.Unix(1000, 0)
	relisted := &podstate.Pod{UID: "a", Containers: []*podstate.Container{{ID: "relisted"}}}
	cases := []struct {
		name      string
		prepare   func(c *Cache)
		notBefore time.Time
		wantLists int // by UID label
		wantByID  int
		want      []string
	}{
		{"empty cache lists the pod", func(*Cache) {}, t0, 1, 0, []string{"a-1", "relisted"}},
		{"relist newer than the last sync", func(c *Cache) { c.SetAll([]*podstate.Pod{relisted}, t0.Add(time.Second)) }, t0, 0, 0, []string{"relisted"}},
		{"relist older than the last sync", func(c *Cache) { c.SetAll([]*podstate.Pod{relisted}, t0) }, t0.Add(time.Second), 0, 1, []string{"relisted"}},
		{"event after the relist", func(c *Cache) {
			c.SetAll([]*podstate.Pod{relisted}, t0.Add(time.Second))
			c.Invalidate("a", "", t0.Add(2*time.Second))
		}, t0, 0, 1, []string{"relisted"}},
		{"event of a container the entry lacks", func(c *Cache) {
			c.SetAll([]*podstate.Pod{relisted}, t0.Add(time.Second))
			c.Invalidate("a", "a-1", t0.Add(2*time.Second))
		}, t0, 0, 1, []string{"a-1", "relisted"}},
		{"event before the relist", func(c *Cache) {
			c.SetAll([]*podstate.Pod{relisted}, t0.Add(time.Second))
			c.Invalidate("a", "a-1", t0)
		}, t0, 0, 0, []string{"relisted"}},
		{"pod not in a complete list newer than the last sync", func(c *Cache) {
			c.SetAll([]*podstate.Pod{relisted}, t0.Add(time.Second))
			c.SetAll(nil, t0.Add(2*time.Second))
		}, t0, 0, 0, []string{}},
		{"pod not in a complete list older than the last sync", func(c *Cache) {
			c.SetAll(nil, t0)
		}, t0.Add(time.Second), 1, 0, []string{"a-1", "relisted"}},
		{"pod not in the list but a create was tracked", func(c *Cache) {
			c.SetAll(nil, t0.Add(time.Second))
			c.Track("a", "a-1")
		}, t0, 1, 0, []string{"a-1", "relisted"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFake(map[types.UID][]string{"a": {"relisted", "a-1"}})
			c := New(rt, clocktesting.NewFakePassiveClock(t0.Add(10*time.Second)))
			tc.prepare(c)
			got, err := c.GetNewerThan(context.Background(), "a", tc.notBefore)
			if err != nil {
				t.Fatal(err)
			}
			if rt.lists["a"] != tc.wantLists || rt.byID["a"] != tc.wantByID || !reflect.DeepEqual(ids(got), tc.want) {
				t.Fatalf("lists=%d byID=%d containers=%v, want %d %d %v", rt.lists["a"], rt.byID["a"], ids(got), tc.wantLists, tc.wantByID, tc.want)
			}
		})
	}
}

// The first sync of a new pod reads nothing; the refresh after its start
// reads the container it created by ID, never by a label list.
func TestNewPodReadsOnlyWhatItCreated(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rt := newFake(map[types.UID][]string{"other": {"o-1"}})
	clk := clocktesting.NewFakePassiveClock(t0)
	c := New(rt, clk)
	if _, err := c.ListPods(context.Background()); err != nil { // the manager's list at start
		t.Fatal(err)
	}
	clk.SetTime(t0.Add(time.Second))
	got, err := c.GetNewerThan(context.Background(), "new", time.Time{})
	if err != nil || len(got.Containers) != 0 {
		t.Fatalf("first sync: %v %v, want an empty pod", got, err)
	}
	c.Track("new", "n-1")
	rt.pods["new"] = []string{"n-1"}
	clk.SetTime(t0.Add(2 * time.Second))
	got, err = c.Refresh(context.Background(), "new")
	if err != nil || !reflect.DeepEqual(ids(got), []string{"n-1"}) {
		t.Fatalf("refresh after the start: %v %v, want n-1", got, err)
	}
	if rt.lists["new"] != 0 || rt.byID["new"] != 1 || rt.full != 1 {
		t.Fatalf("lists=%d byID=%d full=%d, want 0 1 1", rt.lists["new"], rt.byID["new"], rt.full)
	}
	// A relist that started before the create and ends after the refresh
	// keeps the newer entry; one that started after it has the container.
	c.SetAll(nil, t0.Add(time.Second))
	if got, _ := c.GetNewerThan(context.Background(), "new", t0.Add(time.Second)); !reflect.DeepEqual(ids(got), []string{"n-1"}) {
		t.Fatalf("after an older relist: %v", ids(got))
	}
}

// A relist that lacks a new pod (it ran between the pod's first sync and
// its create: every pod of a cold start is overtaken by some relist) leaves
// it empty, not unknown: the refresh after the create reads what was
// tracked by ID, not by a label list (containerd reads every container for
// one).
func TestRelistLackingNewPodKeepsReadsByID(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rt := newFake(map[types.UID][]string{})
	clk := clocktesting.NewFakePassiveClock(t0)
	c := New(rt, clk)
	c.SetAll(nil, t0)
	clk.SetTime(t0.Add(time.Second))
	if _, err := c.GetNewerThan(context.Background(), "new", time.Time{}); err != nil {
		t.Fatal(err)
	}
	c.SetAll(nil, t0.Add(2*time.Second)) // a relist before the create
	c.Track("new", "n-1")
	rt.pods["new"] = []string{"n-1"}
	clk.SetTime(t0.Add(3 * time.Second))
	got, err := c.Refresh(context.Background(), "new")
	if err != nil || !reflect.DeepEqual(ids(got), []string{"n-1"}) || rt.lists["new"] != 0 || rt.byID["new"] != 1 {
		t.Fatalf("refresh: %v %v lists=%d byID=%d, want n-1 read by ID", ids(got), err, rt.lists["new"], rt.byID["new"])
	}
	// A pod whose containers went behind podhost's back is empty after the
	// next relist, without a list of its own.
	delete(rt.pods, "new")
	c.SetAll(nil, t0.Add(4*time.Second))
	if got, _ := c.GetNewerThan(context.Background(), "new", t0.Add(3*time.Second)); len(got.Containers) != 0 || rt.lists["new"] != 0 {
		t.Fatalf("after a relist without it: %v lists=%d", ids(got), rt.lists["new"])
	}
}

// A tracked create that a relist started before it replaced the entry
// without is still read by the next refresh.
func TestTrackedCreateSurvivesOlderRelist(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rt := newFake(map[types.UID][]string{"a": {"a-1"}})
	clk := clocktesting.NewFakePassiveClock(t0.Add(5 * time.Second))
	c := New(rt, clk)
	c.SetAll([]*podstate.Pod{{UID: "a", Containers: []*podstate.Container{{ID: "a-1"}}}}, t0)
	c.Track("a", "a-2")
	rt.pods["a"] = append(rt.pods["a"], "a-2")
	c.SetAll([]*podstate.Pod{{UID: "a", Containers: []*podstate.Container{{ID: "a-1"}}}}, t0.Add(time.Second)) // listed before the create
	got, err := c.Refresh(context.Background(), "a")
	if err != nil || !reflect.DeepEqual(ids(got), []string{"a-1", "a-2"}) || rt.lists["a"] != 0 {
		t.Fatalf("refresh: %v %v lists=%d, want a-1 a-2 by ID", ids(got), err, rt.lists["a"])
	}
	// Read once: a container removed later is not asked for again.
	rt.pods["a"] = []string{"a-1"}
	got, _ = c.Refresh(context.Background(), "a")
	if !reflect.DeepEqual(ids(got), []string{"a-1"}) {
		t.Fatalf("after the removal: %v", ids(got))
	}
}

// A relist that started before a Refresh must not overwrite it.
func TestRelistDoesNotOverwriteNewerRefresh(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(t0.Add(5 * time.Second))
	rt := newFake(map[types.UID][]string{"a": {"a-1"}})
	c := New(rt, clk)
	if _, err := c.Refresh(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	c.SetAll(nil, t0) // started before the refresh, finished after it
	got, _ := c.GetNewerThan(context.Background(), "a", t0.Add(time.Second))
	if rt.lists["a"] != 1 || rt.byID["a"] != 0 || !reflect.DeepEqual(ids(got), []string{"a-1"}) {
		t.Fatalf("lists=%d byID=%d, want the refreshed entry kept", rt.lists["a"], rt.byID["a"])
	}
}

// A pod whose worker was forgotten (Delete) may keep exited containers: its
// next first sync lists it, not the empty pod an older complete list would
// vouch for.
func TestDeletedPodIsListedAgain(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c, rt, _ := listed(t0, "a-1")
	c.Delete("a")
	got, err := c.GetNewerThan(context.Background(), "a", time.Time{})
	if err != nil || !reflect.DeepEqual(ids(got), []string{"a-1"}) || rt.lists["a"] != 1 {
		t.Fatalf("first sync after Delete: %v %v lists=%d, want a-1 listed", ids(got), err, rt.lists["a"])
	}
	// A complete list newer than the Delete vouches again.
	c.Delete("a")
	c.SetAll(nil, t0.Add(2*time.Second))
	if got, _ := c.GetNewerThan(context.Background(), "a", time.Time{}); len(got.Containers) != 0 || rt.lists["a"] != 1 {
		t.Fatalf("after a newer relist: %v lists=%d, want empty, no list", ids(got), rt.lists["a"])
	}
}

// A tracked create makes even a fresh entry be read again.
func TestTrackedCreateOverridesFreshEntry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rt := newFake(map[types.UID][]string{"a": {"a-1", "a-2"}})
	c := New(rt, clocktesting.NewFakePassiveClock(t0.Add(5*time.Second)))
	c.SetAll([]*podstate.Pod{{UID: "a", Containers: []*podstate.Container{{ID: "a-1"}}}}, t0.Add(time.Second))
	c.Track("a", "a-2")
	got, err := c.GetNewerThan(context.Background(), "a", t0)
	if err != nil || !reflect.DeepEqual(ids(got), []string{"a-1", "a-2"}) || rt.byID["a"] != 1 {
		t.Fatalf("%v %v byID=%d, want a-1 a-2 read by ID", ids(got), err, rt.byID["a"])
	}
}

// A task event that lands while a refresh is under way (after it read the
// runtime, before it stored what it read) is not lost: the entry it stores
// is stale. A container that exits right after its start depends on this.
func TestEventDuringRefreshMakesItStale(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c, rt, clk := listed(t0, "a-1")
	rt.during = func() { c.Invalidate("a", "a-1", t0.Add(2*time.Second)); rt.during = nil } // the exit
	if _, err := c.Refresh(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(t0.Add(3 * time.Second))
	if _, err := c.GetNewerThan(context.Background(), "a", t0); err != nil {
		t.Fatal(err)
	}
	if rt.byID["a"] != 2 {
		t.Fatalf("reads by ID = %d, want 2: the entry the refresh stored must be stale", rt.byID["a"])
	}
}

// A read that began before a pod's Delete (a relist, a refresh) does not
// bring its entry back: nothing would Delete it again, and every later
// relist would keep it as an empty pod.
func TestReadOlderThanDeleteLeavesNoEntry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c, rt, clk := listed(t0, "a-1")
	// A refresh whose pod is Deleted while it reads.
	rt.during = func() { clk.SetTime(t0.Add(2 * time.Second)); c.Delete("a") }
	if _, err := c.Refresh(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	rt.during = nil
	if n := c.Len(); n != 0 {
		t.Fatalf("the refresh brought back %d entries", n)
	}
	// Relists that began before the Delete, or at its very time, still
	// listing a-1.
	for _, at := range []time.Time{t0.Add(time.Second), t0.Add(2 * time.Second)} {
		c.SetAll([]*podstate.Pod{{UID: "a", Containers: []*podstate.Container{{ID: "a-1"}}}}, at)
	}
	for i := range 3 {
		c.SetAll(nil, t0.Add(time.Duration(3+i)*time.Second))
	}
	if n := c.Len(); n != 0 {
		t.Fatalf("%d entries after the pod's Delete, want 0", n)
	}
}

// Events of a pod with no worker (deleted, or an orphan) leave nothing
// behind once a newer complete list covers them.
func TestEventsOfPodWithoutWorkerAreNotKept(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c, _, _ := listed(t0, "a-1")
	c.Delete("a")
	c.Invalidate("a", "a-1", t0.Add(time.Second))
	c.Invalidate("orphan", "o-1", t0.Add(time.Second))
	c.SetAll(nil, t0.Add(2*time.Second))
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.known) != 0 || len(c.eventAt) != 0 || len(c.pods) != 0 {
		t.Fatalf("kept: known %v, eventAt %v, pods %d", c.known, c.eventAt, len(c.pods))
	}
}

// A container the worker Tracked is read even when its pod has no entry
// and a relist that began before the create goes by: only IDs that events
// alone named are dropped with the pod.
func TestTrackedIDOutlivesRelistWithoutEntry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rt := newFake(map[types.UID][]string{})
	clk := clocktesting.NewFakePassiveClock(t0.Add(2 * time.Second))
	c := New(rt, clk)
	c.Track("b", "b-1")
	c.SetAll(nil, t0.Add(time.Second))
	rt.pods["b"] = []string{"b-1"}
	got, err := c.GetNewerThan(context.Background(), "b", t0)
	if err != nil || !reflect.DeepEqual(ids(got), []string{"b-1"}) {
		t.Fatalf("%v %v, want b-1", ids(got), err)
	}
}
