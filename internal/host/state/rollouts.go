package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/podhost/podhost/internal/model/records"
)

func migrateV4(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketRollouts); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketRollouts, err)
	}
	return nil
}

// PutRollout stores r under r.FullName.
func (db *DB) PutRollout(r records.RolloutRecord) error {
	return db.UpdateRollouts([]records.RolloutRecord{r}, nil)
}

// DeleteRollout forgets the history of fullName; absent is fine.
func (db *DB) DeleteRollout(fullName string) error { return db.UpdateRollouts(nil, []string{fullName}) }

// UpdateRollouts stores put and forgets the histories in del, in one
// commit: a snapshot of many new pods writes once.
func (db *DB) UpdateRollouts(put []records.RolloutRecord, del []string) error {
	return updateKeyed(db, bucketRollouts, "rollout", func(r records.RolloutRecord) string { return r.FullName }, put, del)
}

// ListRollouts returns every stored history.
func (db *DB) ListRollouts() ([]records.RolloutRecord, error) {
	return view(db, func(tx *Tx) ([]records.RolloutRecord, error) {
		return listJSON[records.RolloutRecord](tx.tx, bucketRollouts)
	})
}
