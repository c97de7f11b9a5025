package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/podhost/podhost/internal/model/records"
)

var bucketQuotas = []byte("quotas")

func migrateV7(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketQuotas); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketQuotas, err)
	}
	return nil
}

// AllocateQuota returns the project ID record of want.Key(): the stored
// one if there is one, else want with the ID pick chooses next to every
// other record, written in the same transaction (so two volumes never get
// one ID, and the ID is recorded before it is set on a directory).
func (db *DB) AllocateQuota(want records.QuotaRecord, pick func(used []records.QuotaRecord) (uint32, error)) (records.QuotaRecord, error) {
	var out records.QuotaRecord
	if err := requireKey("quota", string(want.UID)); err != nil {
		return out, err
	}
	if err := requireKey("quota", want.Volume); err != nil {
		return out, err
	}
	err := db.Update(func(tx *Tx) error {
		found, err := getJSON(tx.tx, bucketQuotas, []byte(want.Key()), &out)
		if err != nil || found {
			return err
		}
		used, err := listJSON[records.QuotaRecord](tx.tx, bucketQuotas)
		if err != nil {
			return err
		}
		out = want
		if out.ProjectID, err = pick(used); err != nil {
			return err
		}
		return putJSON(tx.tx, bucketQuotas, []byte(out.Key()), out)
	})
	return out, err
}

// DeleteQuota releases the project ID record of key ("<pod uid>/<volume>");
// absent is fine.
func (db *DB) DeleteQuota(key string) error {
	return db.batch(func(tx *Tx) error { return deleteKey(tx.tx, bucketQuotas, []byte(key)) })
}

// ListQuotas returns every project ID record.
func (db *DB) ListQuotas() ([]records.QuotaRecord, error) {
	return view(db, func(tx *Tx) ([]records.QuotaRecord, error) {
		return listJSON[records.QuotaRecord](tx.tx, bucketQuotas)
	})
}
