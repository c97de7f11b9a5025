package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

var bucketUserNS = []byte("userns")

func migrateV6(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketUserNS); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketUserNS, err)
	}
	return nil
}

// AllocateUserNS returns pod uid's user namespace range: its record if it
// has one, else the one pick chooses next to every other pod's, written in
// the same transaction (so two pods never get one range, and the range is
// recorded before anything uses it).
func (db *DB) AllocateUserNS(uid types.UID, pick func(used []records.UserNSRecord) (records.UserNSRecord, error)) (records.UserNSRecord, error) {
	var out records.UserNSRecord
	if err := requireKey("user namespace", string(uid)); err != nil {
		return out, err
	}
	err := db.Update(func(tx *Tx) error {
		found, err := getJSON(tx.tx, bucketUserNS, []byte(uid), &out)
		if err != nil || found {
			return err
		}
		used, err := listJSON[records.UserNSRecord](tx.tx, bucketUserNS)
		if err != nil {
			return err
		}
		if out, err = pick(used); err != nil {
			return err
		}
		out.UID = uid
		return putJSON(tx.tx, bucketUserNS, []byte(uid), out)
	})
	return out, err
}

// PutUserNS stores a pod's range as given (state rebuilt from containers).
func (db *DB) PutUserNS(r records.UserNSRecord) error {
	return updateKeyed(db, bucketUserNS, "user namespace", func(r records.UserNSRecord) string { return string(r.UID) }, []records.UserNSRecord{r}, nil)
}

// DeleteUserNS releases pod uid's range; absent is fine.
func (db *DB) DeleteUserNS(uid types.UID) error {
	return db.batch(func(tx *Tx) error { return tx.DeleteUserNS(uid) })
}

// DeleteUserNS releases pod uid's range within tx.
func (t *Tx) DeleteUserNS(uid types.UID) error { return deleteKey(t.tx, bucketUserNS, []byte(uid)) }

// ListUserNS returns every pod's range, by pod UID.
func (db *DB) ListUserNS() ([]records.UserNSRecord, error) {
	return view(db, func(tx *Tx) ([]records.UserNSRecord, error) {
		return listJSON[records.UserNSRecord](tx.tx, bucketUserNS)
	})
}
