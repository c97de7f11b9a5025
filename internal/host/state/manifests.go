package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/podhost/podhost/internal/model/records"
)

func migrateV2(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketManifests); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketManifests, err)
	}
	return nil
}

// PutManifest records data as the last good content of the file at path.
func (db *DB) PutManifest(path string, data []byte) error {
	return db.UpdateManifests([]records.ManifestRecord{{Path: path, Data: data}}, nil)
}

// DeleteManifest forgets the file at path (it is gone); absent is fine.
func (db *DB) DeleteManifest(path string) error { return db.UpdateManifests(nil, []string{path}) }

// UpdateManifests stores put and forgets the files in del, in one commit: a
// relist that sees many new files (podhost's first start) writes once.
func (db *DB) UpdateManifests(put []records.ManifestRecord, del []string) error {
	return updateKeyed(db, bucketManifests, "manifest", func(r records.ManifestRecord) string { return r.Path }, put, del)
}

// ListManifests returns the last good content of every recorded file.
func (db *DB) ListManifests() ([]records.ManifestRecord, error) {
	return view(db, func(tx *Tx) ([]records.ManifestRecord, error) {
		return listJSON[records.ManifestRecord](tx.tx, bucketManifests)
	})
}
