package state

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// The DB methods below each run one transaction; see the Tx methods of the
// same name for semantics. Combine several in one DB.Update when they must
// commit together. Single-record writes go through bbolt's Batch: writes
// from concurrent pod workers coalesce into one commit (one fsync) instead
// of queueing for one each; every such function is idempotent, as Batch
// may run it twice.

func (db *DB) PutWorker(r records.WorkerRecord) error {
	return db.batch(func(tx *Tx) error { return tx.PutWorker(r) })
}

func (db *DB) DeleteWorker(uid types.UID) error {
	return db.batch(func(tx *Tx) error { return tx.DeleteWorker(uid) })
}

func (db *DB) ListWorkers() ([]records.WorkerRecord, error) {
	return view(db, (*Tx).ListWorkers)
}

func (db *DB) PutAllocation(a records.Allocation) error {
	return db.batch(func(tx *Tx) error { return tx.PutAllocation(a) })
}

func (db *DB) DeleteAllocation(uid types.UID) error {
	return db.batch(func(tx *Tx) error { return tx.DeleteAllocation(uid) })
}

func (db *DB) ListAllocations() ([]records.Allocation, error) {
	return view(db, (*Tx).ListAllocations)
}

func (db *DB) PutSandbox(s records.SandboxRecord) error {
	return db.batch(func(tx *Tx) error { return tx.PutSandbox(s) })
}

func (db *DB) GetSandbox(id string) (records.SandboxRecord, error) {
	return view(db, func(tx *Tx) (records.SandboxRecord, error) { return tx.GetSandbox(id) })
}

func (db *DB) DeleteSandbox(id string) error {
	return db.batch(func(tx *Tx) error { return tx.DeleteSandbox(id) })
}

func (db *DB) ListSandboxes() ([]records.SandboxRecord, error) {
	return view(db, (*Tx).ListSandboxes)
}

func (db *DB) PodSandboxes(uid types.UID) ([]records.SandboxRecord, error) {
	return view(db, func(tx *Tx) ([]records.SandboxRecord, error) { return tx.PodSandboxes(uid) })
}

func (db *DB) PutStatus(uid types.UID, s corev1.PodStatus) error {
	return db.batch(func(tx *Tx) error { return tx.PutStatus(uid, s) })
}

func (db *DB) GetStatus(uid types.UID) (corev1.PodStatus, error) {
	return view(db, func(tx *Tx) (corev1.PodStatus, error) { return tx.GetStatus(uid) })
}

func (db *DB) DeleteStatus(uid types.UID) error {
	return db.batch(func(tx *Tx) error { return tx.DeleteStatus(uid) })
}

func (db *DB) ListStatuses() (map[types.UID]corev1.PodStatus, error) {
	return view(db, (*Tx).ListStatuses)
}

func (db *DB) AddEvent(uid types.UID, e records.Event) error {
	return db.batch(func(tx *Tx) error { return tx.AddEvent(uid, e) })
}

// AddEvents records evs, in order, in one transaction.
func (db *DB) AddEvents(evs []records.PodEvent) error {
	return db.batch(func(tx *Tx) error {
		for _, e := range evs {
			if err := tx.AddEvent(e.UID, e.Event); err != nil {
				return err
			}
			if err := setEventsPod(tx.tx.Bucket(bucketEvents).Bucket([]byte(e.UID)), e.Namespace, e.Name); err != nil {
				return fmt.Errorf("events of pod %q: %w", e.UID, err)
			}
		}
		return nil
	})
}

// AllPodEvents returns the stored events of every pod (Tx.AllPodEvents).
func (db *DB) AllPodEvents() ([]records.PodEvents, error) {
	return view(db, func(tx *Tx) ([]records.PodEvents, error) { return tx.AllPodEvents() })
}

// ExpireEvents deletes the events of the pods not in keep whose last one
// is older than before (Tx.ExpireEvents); it returns how many pods' went.
func (db *DB) ExpireEvents(before time.Time, keep map[types.UID]bool) (int, error) {
	n := 0
	err := db.batch(func(tx *Tx) error {
		var err error
		n, err = tx.ExpireEvents(before, keep)
		return err
	})
	return n, err
}

func (db *DB) Events(uid types.UID) ([]records.Event, error) {
	return view(db, func(tx *Tx) ([]records.Event, error) { return tx.Events(uid) })
}

func (db *DB) DeleteEvents(uid types.UID) error {
	return db.batch(func(tx *Tx) error { return tx.DeleteEvents(uid) })
}

// PurgePod deletes a pod's worker, allocation, status and user namespace
// range in one transaction (Tx.PurgePod: its events stay until they expire;
// sandbox records are left to sandbox teardown).
func (db *DB) PurgePod(uid types.UID) error {
	return db.batch(func(tx *Tx) error { return tx.PurgePod(uid) })
}

// RecordedPods returns the UIDs of every pod with a worker record, an
// allocation, a status or a user namespace range.
func (db *DB) RecordedPods() (map[types.UID]bool, error) {
	return view(db, func(tx *Tx) (map[types.UID]bool, error) { return tx.RecordedPods() })
}

// view runs fn in a read-only transaction and returns its result.
func view[T any](db *DB, fn func(*Tx) (T, error)) (T, error) {
	var out T
	err := db.View(func(tx *Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

// PutAllocations writes several allocation checkpoints in one transaction.
func (db *DB) PutAllocations(as []records.Allocation) error {
	return db.Update(func(tx *Tx) error {
		for _, a := range as {
			if err := tx.PutAllocation(a); err != nil {
				return err
			}
		}
		return nil
	})
}

// PutStatuses writes several pod statuses in one transaction.
func (db *DB) PutStatuses(sts map[types.UID]corev1.PodStatus) error {
	return db.Update(func(tx *Tx) error {
		for uid, st := range sts {
			if err := tx.PutStatus(uid, st); err != nil {
				return err
			}
		}
		return nil
	})
}
