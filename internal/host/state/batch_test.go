package state

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// TestBatchAloneCommitsAtOnce: a write with no other in flight does not
// wait for a batch to fill (here MaxBatchDelay is an hour).
func TestBatchAloneCommitsAtOnce(t *testing.T) {
	db := openTest(t)
	db.bolt.MaxBatchDelay = time.Hour
	done := make(chan error, 1)
	go func() { done <- db.PutSandbox(records.SandboxRecord{ID: "s1", PodUID: "u1"}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a lone write waited for a batch")
	}
	if _, err := db.GetSandbox("s1"); err != nil {
		t.Fatalf("written record: %v", err)
	}
}

// TestBatchConcurrentWritesStored: writes made while another is in flight
// go through bolt's Batch (with an hour's delay, committed once
// MaxBatchSize of them have come), and each is stored.
func TestBatchConcurrentWritesStored(t *testing.T) {
	db := openTest(t)
	db.bolt.MaxBatchDelay = time.Hour
	db.bolt.MaxBatchSize = 3
	db.batching.Add(1) // a write in flight
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = db.PutWorker(records.WorkerRecord{UID: types.UID(rune('a' + i))}) })
	}
	wg.Wait()
	db.batching.Add(-1)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	ws, err := db.ListWorkers()
	if err != nil || len(ws) != 3 {
		t.Fatalf("workers %v, %v; want 3", ws, err)
	}
}
