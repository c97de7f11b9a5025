package state

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/model/records"
)

func TestCronJobRoundTrip(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Unix(1700000040, 0).UTC()
	r := records.CronJobRecord{Key: "CronJob default/tick", Created: at, LastScheduleTime: at,
		Runs: []records.CronRun{{Scheduled: at, FirstUID: "u1"}}}
	if err := db.PutCronJob(r); err != nil {
		t.Fatal(err)
	}
	if err := db.PutCronJob(records.CronJobRecord{}); err == nil {
		t.Fatal("PutCronJob with an empty key: want an error")
	}
	got, err := db.ListCronJobs()
	if err != nil || len(got) != 1 || got[0].Key != r.Key || !got[0].LastScheduleTime.Equal(at) ||
		len(got[0].Runs) != 1 || got[0].Runs[0].FirstUID != "u1" || !got[0].LastSuccessfulTime.IsZero() {
		t.Fatalf("ListCronJobs = %+v, %v", got, err)
	}
	if err := db.DeleteCronJob(r.Key); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.ListCronJobs(); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
}
