package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/podhost/podhost/internal/model/records"
)

var bucketIdentities = []byte("identities")

func migrateV3(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketIdentities); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketIdentities, err)
	}
	return nil
}

// UpdateIdentities stores put and deletes the records of the full names in
// del, in one transaction (absent is fine).
func (db *DB) UpdateIdentities(put []records.IdentityRecord, del []string) error {
	return updateKeyed(db, bucketIdentities, "identity", func(r records.IdentityRecord) string { return r.FullName }, put, del)
}

// ListIdentities returns every identity record, by full name.
func (db *DB) ListIdentities() ([]records.IdentityRecord, error) {
	return view(db, func(tx *Tx) ([]records.IdentityRecord, error) {
		return listJSON[records.IdentityRecord](tx.tx, bucketIdentities)
	})
}
