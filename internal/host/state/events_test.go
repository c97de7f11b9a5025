package state

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// Stored events aggregate as the kubelet's recorder does: a repeat is
// counted into its first occurrence and becomes the newest, so a failing
// probe keeps Pulled and Started; the bytes a pod's events take are bounded.
func TestEventsAggregatedAndBounded(t *testing.T) {
	db := openTest(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var batch []records.PodEvent
	for i, r := range []string{"Pulled", "Started"} {
		batch = append(batch, records.PodEvent{UID: "u1", Event: records.Event{Time: t0.Add(time.Duration(i) * time.Second), Type: "Normal", Reason: r, Message: r}})
	}
	for i := range 300 {
		batch = append(batch, records.PodEvent{UID: "u1", Event: records.Event{Time: t0.Add(time.Duration(10+i) * time.Second), Type: "Warning", Reason: "Unhealthy", Message: "Liveness probe failed"}})
	}
	if err := db.AddEvents(batch); err != nil {
		t.Fatal(err)
	}
	got, err := db.Events("u1")
	if err != nil || len(got) != 3 || got[0].Reason != "Pulled" || got[1].Reason != "Started" {
		t.Fatalf("events %+v, %v", got, err)
	}
	if u := got[2]; u.Count != 300 || !u.First.Equal(t0.Add(10*time.Second)) || !u.Time.Equal(t0.Add(309*time.Second)) {
		t.Fatalf("aggregated %+v", u)
	}
	for i := range 20 {
		if err := db.AddEvent("u1", records.Event{Type: "Warning", Reason: "Big", Message: strings.Repeat("x", 8<<10) + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = db.Events("u1")
	size := 0
	for _, e := range got {
		size += e.Size()
	}
	if size > records.MaxEventBytesPerPod || got[len(got)-1].Message[8<<10] != 'a'+19 {
		t.Fatalf("%d events, %d bytes (bound %d)", len(got), size, records.MaxEventBytesPerPod)
	}
}

// A deleted pod's events stay, listed under its name, until an hour after
// the last one; a pod still kept is never expired.
func TestEventsOutliveThePod(t *testing.T) {
	db := openTest(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, uid := range []types.UID{"gone", "old", "live"} {
		e := records.PodEvent{UID: uid, Namespace: "ns", Name: string(uid), Event: records.Event{Time: t0.Add(time.Duration(i) * time.Hour), Type: "Warning", Reason: "Failed", Message: "refused"}}
		if err := db.AddEvents([]records.PodEvent{e}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.PurgePod("gone"); err != nil {
		t.Fatal(err)
	}
	all, err := db.AllPodEvents()
	if err != nil || len(all) != 3 {
		t.Fatalf("AllPodEvents = %+v, %v", all, err)
	}
	for _, pe := range all {
		if pe.Namespace != "ns" || pe.Name != string(pe.UID) || len(pe.Events) != 1 || pe.Events[0].Reason != "Failed" {
			t.Fatalf("pod events %+v", pe)
		}
	}
	// At t0+2h30: "gone" (last event t0) and "old" (t0+1h) are past the
	// TTL; "live" is kept.
	n, err := db.ExpireEvents(t0.Add(150*time.Minute-records.EventTTL), map[types.UID]bool{"live": true})
	if err != nil || n != 2 {
		t.Fatalf("ExpireEvents = %d, %v; want 2", n, err)
	}
	if all, _ := db.AllPodEvents(); len(all) != 1 || all[0].UID != "live" {
		t.Fatalf("after expiry: %+v", all)
	}
}
