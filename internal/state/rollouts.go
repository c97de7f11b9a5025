package state

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"
)

// RolloutRecord is the version history of one pod full name
// (internal/rollout): the last versions of its manifest, the rollback
// window of the newest one and the override (rollback or undo) in force.
type RolloutRecord struct {
	FullName  string     `json:"fullName"` // namespace/name (also the key)
	Revisions []Revision `json:"revisions"`
	// Override, when set, replaces the source's version SourceUID of the
	// pod with revision ToUID until the source yields another version.
	Override *Override `json:"override,omitempty"`
}

// Revision is one version of a pod as its manifest source yielded it.
type Revision struct {
	Number  int             `json:"number"`
	UID     types.UID       `json:"uid"`
	Hash    string          `json:"hash"`
	Source  string          `json:"source"` // file or URL
	Seen    time.Time       `json:"seen"`   // first seen: the rollback window starts here
	Outcome string          `json:"outcome"`
	Ready   bool            `json:"ready,omitempty"` // was Ready once: a version to roll back to
	Reason  string          `json:"reason,omitempty"`
	Pod     json.RawMessage `json:"pod"` // the decoded pod (JSON): brings it back with its UID
}

// Override replaces one version of a pod by an earlier revision.
type Override struct {
	SourceUID types.UID `json:"sourceUID"` // the version the source yields
	ToUID     types.UID `json:"toUID"`     // the revision that runs instead
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Manual    bool      `json:"manual,omitempty"` // rollout undo
	At        time.Time `json:"at"`
}

func migrateV4(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketRollouts); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketRollouts, err)
	}
	return nil
}

// PutRollout stores r under r.FullName.
func (db *DB) PutRollout(r RolloutRecord) error { return db.UpdateRollouts([]RolloutRecord{r}, nil) }

// DeleteRollout forgets the history of fullName; absent is fine.
func (db *DB) DeleteRollout(fullName string) error { return db.UpdateRollouts(nil, []string{fullName}) }

// UpdateRollouts stores put and forgets the histories in del, in one
// commit: a snapshot of many new pods writes once.
func (db *DB) UpdateRollouts(put []RolloutRecord, del []string) error {
	return updateKeyed(db, bucketRollouts, "rollout", func(r RolloutRecord) string { return r.FullName }, put, del)
}

// ListRollouts returns every stored history.
func (db *DB) ListRollouts() ([]RolloutRecord, error) {
	return view(db, func(tx *Tx) ([]RolloutRecord, error) { return listJSON[RolloutRecord](tx.tx, bucketRollouts) })
}
