package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// AddEvent adds e to the pod's events as records.AddEvent does: a repeat
// of a stored event replaces it, counted, as the newest; the oldest beyond
// MaxEventsPerPod or MaxEventBytesPerPod are dropped.
func (t *Tx) AddEvent(uid types.UID, e records.Event) error {
	if err := requireKey("event", string(uid)); err != nil {
		return err
	}
	b, err := t.tx.Bucket(bucketEvents).CreateBucketIfNotExists([]byte(uid))
	if err != nil {
		return fmt.Errorf("events of pod %q: %w", uid, err)
	}
	keys, evs, err := readEvents(b, uid)
	if err != nil {
		return err
	}
	e = e.Bounded()
	if i := slices.IndexFunc(evs, e.Same); i >= 0 {
		e = evs[i].Repeat(e)
		if err := b.Delete(keys[i]); err != nil {
			return fmt.Errorf("replace event of pod %q: %w", uid, err)
		}
		keys, evs = slices.Delete(keys, i, i+1), slices.Delete(evs, i, i+1)
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
	all := append(evs, e)
	for _, k := range keys[:len(all)-len(records.TrimEvents(all))] {
		if err := b.Delete(k); err != nil {
			return fmt.Errorf("drop old event: %w", err)
		}
	}
	return nil
}

// readEvents reads a pod's events bucket: its keys and events, oldest
// first.
func readEvents(b *bolt.Bucket, uid types.UID) ([][]byte, []records.Event, error) {
	var keys [][]byte
	var evs []records.Event
	err := b.ForEach(func(k, raw []byte) error {
		if len(k) != 8 {
			return nil // not an event (eventsPodKey)
		}
		var e records.Event
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("decode event %x of pod %q: %w", k, uid, err)
		}
		keys, evs = append(keys, bytes.Clone(k)), append(evs, e)
		return nil
	})
	return keys, evs, err
}

func seqKey(seq uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

// Events returns the pod's events, oldest first (empty when none).
func (t *Tx) Events(uid types.UID) ([]records.Event, error) {
	b := t.tx.Bucket(bucketEvents).Bucket([]byte(uid))
	if b == nil {
		return []records.Event{}, nil
	}
	_, evs, err := readEvents(b, uid)
	if evs == nil {
		evs = []records.Event{}
	}
	return evs, err
}

// DeleteEvents removes all events of the pod; absent is fine.
func (t *Tx) DeleteEvents(uid types.UID) error {
	err := t.tx.Bucket(bucketEvents).DeleteBucket([]byte(uid))
	if err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
		return fmt.Errorf("delete events of pod %q: %w", uid, err)
	}
	return nil
}

// eventsPodKey holds, in a pod's events bucket, the pod's namespace and
// name (event keys are 8-byte sequences): a deleted pod's events are
// listed under its name until they expire.
var eventsPodKey = []byte("pod")

type eventsPod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// setEventsPod records the pod's name in its events bucket, once.
func setEventsPod(b *bolt.Bucket, namespace, name string) error {
	if name == "" || b.Get(eventsPodKey) != nil {
		return nil
	}
	raw, err := json.Marshal(eventsPod{Namespace: namespace, Name: name})
	if err != nil {
		return err
	}
	return b.Put(eventsPodKey, raw)
}

// AllPodEvents returns the events of every pod that has some, with the
// pod's name when it was recorded.
func (t *Tx) AllPodEvents() ([]records.PodEvents, error) {
	var out []records.PodEvents
	err := t.tx.Bucket(bucketEvents).ForEachBucket(func(k []byte) error {
		b := t.tx.Bucket(bucketEvents).Bucket(k)
		pe := records.PodEvents{UID: types.UID(k)}
		var meta eventsPod
		if raw := b.Get(eventsPodKey); raw != nil && json.Unmarshal(raw, &meta) == nil {
			pe.Namespace, pe.Name = meta.Namespace, meta.Name
		}
		_, evs, err := readEvents(b, pe.UID)
		if err != nil {
			return err
		}
		pe.Events = evs
		out = append(out, pe)
		return nil
	})
	return out, err
}

// ExpireEvents deletes the events of the pods not in keep whose last
// event is older than before (the API server's event TTL, counted from the
// last occurrence), and those of pods with none.
func (t *Tx) ExpireEvents(before time.Time, keep map[types.UID]bool) (int, error) {
	var drop [][]byte
	err := t.tx.Bucket(bucketEvents).ForEachBucket(func(k []byte) error {
		if keep[types.UID(k)] {
			return nil
		}
		b := t.tx.Bucket(bucketEvents).Bucket(k)
		_, evs, err := readEvents(b, types.UID(k))
		if err != nil || len(evs) == 0 || evs[len(evs)-1].Time.Before(before) {
			drop = append(drop, bytes.Clone(k)) // undecodable: gone too
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range drop {
		if err := t.tx.Bucket(bucketEvents).DeleteBucket(k); err != nil {
			return 0, fmt.Errorf("expire events of pod %q: %w", k, err)
		}
	}
	return len(drop), nil
}
