package state

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"
)

var bucketLogRemovals = []byte("logremovals")

// LogRemoval records that the log directory of a deleted pod must go
// (internal/syncer): written before the pod's first container is removed,
// deleted once the directory is gone. A podhost that dies in between
// finishes the removal, before the same UID (a manifest applied again)
// starts a container that would write into the old files.
type LogRemoval struct {
	UID   types.UID `json:"uid"` // also the key
	Since time.Time `json:"since"`
}

func migrateV5(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketLogRemovals); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketLogRemovals, err)
	}
	return nil
}

func logRemovalKey(r LogRemoval) string { return string(r.UID) }

// PutLogRemoval stores r under r.UID.
func (db *DB) PutLogRemoval(r LogRemoval) error {
	return updateKeyed(db, bucketLogRemovals, "log removal", logRemovalKey, []LogRemoval{r}, nil)
}

// DeleteLogRemoval forgets the removal of uid's logs; absent is fine.
func (db *DB) DeleteLogRemoval(uid types.UID) error {
	return updateKeyed(db, bucketLogRemovals, "log removal", logRemovalKey, nil, []string{string(uid)})
}

// ListLogRemovals returns every pending removal, by UID.
func (db *DB) ListLogRemovals() ([]LogRemoval, error) {
	return view(db, func(tx *Tx) ([]LogRemoval, error) { return listJSON[LogRemoval](tx.tx, bucketLogRemovals) })
}
