package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"
)

var bucketIdentities = []byte("identities")

// IdentityRecord pins the UID of the pod FullName while its identity hash
// (manifest.Identity) is IdentityHash, when that UID is not the one the
// identity derives: a pod adopted under the UID an older podhost derived
// from its full spec hash (internal/manager). Without the record, the
// pod's first label edit after the upgrade would change that UID. The
// record goes when the pod goes or changes identity.
type IdentityRecord struct {
	FullName     string    `json:"fullName"` // namespace/name (also the key)
	IdentityHash string    `json:"identityHash"`
	UID          types.UID `json:"uid"`
}

func migrateV3(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketIdentities); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketIdentities, err)
	}
	return nil
}

// UpdateIdentities stores put and deletes the records of the full names in
// del, in one transaction (absent is fine).
func (db *DB) UpdateIdentities(put []IdentityRecord, del []string) error {
	return updateKeyed(db, bucketIdentities, "identity", func(r IdentityRecord) string { return r.FullName }, put, del)
}

// ListIdentities returns every identity record, by full name.
func (db *DB) ListIdentities() ([]IdentityRecord, error) {
	return view(db, func(tx *Tx) ([]IdentityRecord, error) { return listJSON[IdentityRecord](tx.tx, bucketIdentities) })
}
