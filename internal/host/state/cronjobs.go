package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/podhost/podhost/internal/model/records"
)

var bucketCronJobs = []byte("cronjobs")

// A cronjob record, cronjobs/<CronJob namespace/name>, is a CronJob's
// last schedule time and the Jobs it made (records.CronJobRecord).
func migrateV9(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketCronJobs); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketCronJobs, err)
	}
	return nil
}

// PutCronJob stores r under r.Key.
func (db *DB) PutCronJob(r records.CronJobRecord) error {
	return updateKeyed(db, bucketCronJobs, "cronjob", cronJobKey, []records.CronJobRecord{r}, nil)
}

// DeleteCronJob forgets the record of key; absent is fine.
func (db *DB) DeleteCronJob(key string) error {
	return updateKeyed(db, bucketCronJobs, "cronjob", cronJobKey, nil, []string{key})
}

// ListCronJobs returns every stored cronjob record.
func (db *DB) ListCronJobs() ([]records.CronJobRecord, error) {
	return view(db, func(tx *Tx) ([]records.CronJobRecord, error) {
		return listJSON[records.CronJobRecord](tx.tx, bucketCronJobs)
	})
}

func cronJobKey(r records.CronJobRecord) string { return r.Key }
