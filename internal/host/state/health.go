package state

import (
	"sync"
	"time"
)

// WriteHealth says whether the last write to the state db committed. A
// failed commit (ENOSPC on a full state dir, an I/O error) is rolled back by
// bbolt: nothing already committed is lost, and the writer sees the error.
type WriteHealth struct {
	OK    bool
	Err   string    // the failed commit's error
	Since time.Time // first failure of the current run of failures
}

type writeHealth struct {
	mu    sync.Mutex
	err   error
	since time.Time
}

// note records a write's outcome: err is the transaction's, fnErr what the
// caller's function returned (a refusal, not a failure of the db).
func (h *writeHealth) note(err, fnErr error) {
	if err != nil && err == fnErr {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err == nil:
		h.err, h.since = nil, time.Time{}
	case h.err == nil:
		h.err, h.since = err, time.Now()
	default:
		h.err = err
	}
}

// WriteHealth reports the outcome of the last write.
func (db *DB) WriteHealth() WriteHealth {
	db.health.mu.Lock()
	defer db.health.mu.Unlock()
	if db.health.err == nil {
		return WriteHealth{OK: true}
	}
	return WriteHealth{Err: db.health.err.Error(), Since: db.health.since}
}

var keyProbe = []byte("write-probe")

// ProbeWrite commits a small record (the time) to find out whether writes
// work again; the daemon calls it only while WriteHealth is not OK, so a
// healthy db gets no extra writes.
func (db *DB) ProbeWrite() error {
	return db.Update(func(tx *Tx) error {
		return putJSON(tx.tx, bucketMeta, keyProbe, time.Now().UTC())
	})
}
