package podcache

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podhost/podhost/internal/podstate"
)

// countingLister returns one container per pod and counts the lists.
type countingLister struct{ calls map[types.UID]int }

func (l *countingLister) ListPod(_ context.Context, uid types.UID) (*podstate.Pod, error) {
	l.calls[uid]++
	return &podstate.Pod{UID: uid, Containers: []*podstate.Container{{ID: string(uid) + "-c"}}}, nil
}

func TestGetNewerThan(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pod := &podstate.Pod{UID: "a", Containers: []*podstate.Container{{ID: "relisted"}}}
	cases := []struct {
		name      string
		prepare   func(c *Cache)
		notBefore time.Time
		wantLists int
		wantID    string
	}{
		{"empty cache lists the pod", func(*Cache) {}, t0, 1, "a-c"},
		{"relist newer than the last sync", func(c *Cache) { c.SetAll([]*podstate.Pod{pod}, t0.Add(time.Second)) }, t0, 0, "relisted"},
		{"relist older than the last sync", func(c *Cache) { c.SetAll([]*podstate.Pod{pod}, t0) }, t0.Add(time.Second), 1, "a-c"},
		{"event after the relist", func(c *Cache) {
			c.SetAll([]*podstate.Pod{pod}, t0.Add(time.Second))
			c.Invalidate("a", t0.Add(2*time.Second))
		}, t0, 1, "a-c"},
		{"event before the relist", func(c *Cache) {
			c.SetAll([]*podstate.Pod{pod}, t0.Add(time.Second))
			c.Invalidate("a", t0)
		}, t0, 0, "relisted"},
		{"pod gone from a relist", func(c *Cache) {
			c.SetAll([]*podstate.Pod{pod}, t0.Add(time.Second))
			c.SetAll(nil, t0.Add(2*time.Second))
		}, t0, 1, "a-c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &countingLister{calls: map[types.UID]int{}}
			c := New(l, clocktesting.NewFakePassiveClock(t0.Add(10*time.Second)))
			tc.prepare(c)
			got, err := c.GetNewerThan(context.Background(), "a", tc.notBefore)
			if err != nil {
				t.Fatal(err)
			}
			if l.calls["a"] != tc.wantLists || got.Containers[0].ID != tc.wantID {
				t.Fatalf("lists=%d id=%s, want %d %s", l.calls["a"], got.Containers[0].ID, tc.wantLists, tc.wantID)
			}
		})
	}
}

// A relist that started before a Refresh must not overwrite it.
func TestRelistDoesNotOverwriteNewerRefresh(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(t0.Add(5 * time.Second))
	l := &countingLister{calls: map[types.UID]int{}}
	c := New(l, clk)
	if _, err := c.Refresh(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	c.SetAll(nil, t0) // started before the refresh, finished after it
	got, _ := c.GetNewerThan(context.Background(), "a", t0.Add(time.Second))
	if l.calls["a"] != 1 || got.Containers[0].ID != "a-c" {
		t.Fatalf("lists=%d, want the refreshed entry kept", l.calls["a"])
	}
}
