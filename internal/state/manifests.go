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
	return db.UpdateManifests([]ManifestRecord{{Path: path, Data: data}}, nil)
}

// DeleteManifest forgets the file at path (it is gone); absent is fine.
func (db *DB) DeleteManifest(path string) error { return db.UpdateManifests(nil, []string{path}) }

// UpdateManifests stores put and forgets the files in del, in one commit: a
// relist that sees many new files (podhost's first start) writes once.
func (db *DB) UpdateManifests(put []ManifestRecord, del []string) error {
	return updateKeyed(db, bucketManifests, "manifest", func(r ManifestRecord) string { return r.Path }, put, del)
}

// ListManifests returns the last good content of every recorded file.
func (db *DB) ListManifests() ([]ManifestRecord, error) {
	return view(db, func(tx *Tx) ([]ManifestRecord, error) { return listJSON[ManifestRecord](tx.tx, bucketManifests) })
}
