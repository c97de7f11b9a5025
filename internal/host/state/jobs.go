package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/podhost/podhost/internal/model/records"
)

var bucketJobs = []byte("jobs")

// A job record, jobs/<kind namespace/name>, is a finished Job run whose
// pods its ttlSecondsAfterFinished removed (records.JobRecord).
func migrateV8(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketJobs); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketJobs, err)
	}
	return nil
}

// PutJob stores r under r.Key.
func (db *DB) PutJob(r records.JobRecord) error {
	return updateKeyed(db, bucketJobs, "job", jobKey, []records.JobRecord{r}, nil)
}

// DeleteJob forgets the record of key; absent is fine.
func (db *DB) DeleteJob(key string) error {
	return updateKeyed(db, bucketJobs, "job", jobKey, nil, []string{key})
}

// ListJobs returns every stored job record.
func (db *DB) ListJobs() ([]records.JobRecord, error) {
	return view(db, func(tx *Tx) ([]records.JobRecord, error) {
		return listJSON[records.JobRecord](tx.tx, bucketJobs)
	})
}

func jobKey(r records.JobRecord) string { return r.Key }
