package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// ManifestRecord is the last content of one manifest file that decoded and
// validated, so a file that is invalid, unreadable or half-written when
// podhost starts keeps its pods at that version (internal/source).
//
// Data is the file's raw bytes. Today a manifest holds only Pods; once a
// manifest can carry a Secret, its values must not be stored here (store the
// file with the Secret's data stripped, or not at all): the state db is not
// a secret store.
type ManifestRecord struct {
	Path string `json:"path"` // the file's path in the manifest dir (also the key)
	Data []byte `json:"data"` // raw bytes (base64 in JSON)
}

func migrateV2(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketManifests); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketManifests, err)
	}
	return nil
}

// PutManifest records data as the last good content of the file at path.
func (db *DB) PutManifest(path string, data []byte) error {
	if err := requireKey("manifest", path); err != nil {
		return err
	}
	return db.batch(func(tx *Tx) error {
		return putJSON(tx.tx, bucketManifests, []byte(path), ManifestRecord{Path: path, Data: data})
	})
}

// DeleteManifest forgets the file at path (it is gone); absent is fine.
func (db *DB) DeleteManifest(path string) error {
	return db.batch(func(tx *Tx) error { return deleteKey(tx.tx, bucketManifests, []byte(path)) })
}

// ListManifests returns the last good content of every recorded file.
func (db *DB) ListManifests() ([]ManifestRecord, error) {
	return view(db, func(tx *Tx) ([]ManifestRecord, error) { return listJSON[ManifestRecord](tx.tx, bucketManifests) })
}
