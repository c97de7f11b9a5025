package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// AddEvent appends e to the pod's events, dropping the oldest beyond
// MaxEventsPerPod.
func (t *Tx) AddEvent(uid types.UID, e records.Event) error {
	if err := requireKey("event", string(uid)); err != nil {
		return err
	}
	b, err := t.tx.Bucket(bucketEvents).CreateBucketIfNotExists([]byte(uid))
	if err != nil {
		return fmt.Errorf("events of pod %q: %w", uid, err)
	}
	seq, err := b.NextSequence()
	if err != nil {
		return fmt.Errorf("events of pod %q: %w", uid, err)
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	if err := b.Put(seqKey(seq), raw); err != nil {
		return fmt.Errorf("put event of pod %q: %w", uid, err)
	}
	return trimEvents(b, seq)
}

// trimEvents deletes every key older than the newest MaxEventsPerPod.
// Keys are sequences, so that is every key below last-MaxEventsPerPod+1.
func trimEvents(b *bolt.Bucket, last uint64) error {
	if last <= records.MaxEventsPerPod {
		return nil
	}
	keep := seqKey(last - records.MaxEventsPerPod + 1)
	c := b.Cursor()
	for k, _ := c.First(); k != nil && string(k) < string(keep); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return fmt.Errorf("drop old event: %w", err)
		}
	}
	return nil
}

func seqKey(seq uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

// Events returns the pod's events, oldest first (empty when none).
func (t *Tx) Events(uid types.UID) ([]records.Event, error) {
	out := []records.Event{}
	b := t.tx.Bucket(bucketEvents).Bucket([]byte(uid))
	if b == nil {
		return out, nil
	}
	err := b.ForEach(func(k, raw []byte) error {
		var e records.Event
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("decode event %x of pod %q: %w", k, uid, err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// DeleteEvents removes all events of the pod; absent is fine.
func (t *Tx) DeleteEvents(uid types.UID) error {
	err := t.tx.Bucket(bucketEvents).DeleteBucket([]byte(uid))
	if err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
		return fmt.Errorf("delete events of pod %q: %w", uid, err)
	}
	return nil
}
