package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"
)

var bucketLogRemovals = []byte("logremovals")

// A log removal record, logremovals/<pod uid>, says that the log
// directory of a deleted pod must go (internal/kubelet/syncer): written before the
// pod's first container is removed, deleted once the directory is gone. A
// podhost that dies in between finishes the removal, before the same UID
// (a manifest applied again) starts a container that would write into the
// old files.
//
// The key is the record: ListLogRemovals reads keys only, so a value it
// could not decode cannot hide a pending removal or fail the list. The
// value (logRemoval) only repeats the UID for a reader of the file.
type logRemoval struct {
	UID types.UID `json:"uid"`
}

func migrateV5(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketLogRemovals); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketLogRemovals, err)
	}
	return nil
}

func logRemovalKey(r logRemoval) string { return string(r.UID) }

// PutLogRemoval records that uid's logs must go.
func (db *DB) PutLogRemoval(uid types.UID) error {
	return updateKeyed(db, bucketLogRemovals, "log removal", logRemovalKey, []logRemoval{{UID: uid}}, nil)
}

// DeleteLogRemoval forgets the removal of uid's logs; absent is fine.
func (db *DB) DeleteLogRemoval(uid types.UID) error {
	return updateKeyed(db, bucketLogRemovals, "log removal", logRemovalKey, nil, []string{string(uid)})
}

// ListLogRemovals returns the UIDs of every pending removal, sorted (the
// keys; values are not read).
func (db *DB) ListLogRemovals() ([]types.UID, error) {
	return view(db, func(tx *Tx) ([]types.UID, error) {
		var out []types.UID
		err := tx.tx.Bucket(bucketLogRemovals).ForEach(func(k, _ []byte) error {
			out = append(out, types.UID(k))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", bucketLogRemovals, err)
		}
		return out, nil
	})
}
