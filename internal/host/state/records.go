package state

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

func requireKey(kind, key string) error {
	if key == "" {
		return fmt.Errorf("%s: empty key", kind)
	}
	return nil
}

// PutWorker stores r under r.UID.
func (t *Tx) PutWorker(r records.WorkerRecord) error {
	if err := requireKey("worker", string(r.UID)); err != nil {
		return err
	}
	return putJSON(t.tx, bucketWorkers, []byte(r.UID), r)
}

// DeleteWorker removes the worker record; absent is fine.
func (t *Tx) DeleteWorker(uid types.UID) error {
	return deleteKey(t.tx, bucketWorkers, []byte(uid))
}

// ListWorkers returns every worker record, ordered by UID.
func (t *Tx) ListWorkers() ([]records.WorkerRecord, error) {
	return listJSON[records.WorkerRecord](t.tx, bucketWorkers)
}

// PutAllocation stores a under a.UID.
func (t *Tx) PutAllocation(a records.Allocation) error {
	if err := requireKey("allocation", string(a.UID)); err != nil {
		return err
	}
	return putJSON(t.tx, bucketAllocations, []byte(a.UID), a)
}

// DeleteAllocation removes the allocation; absent is fine.
func (t *Tx) DeleteAllocation(uid types.UID) error {
	return deleteKey(t.tx, bucketAllocations, []byte(uid))
}

// ListAllocations returns every allocation, ordered by UID.
func (t *Tx) ListAllocations() ([]records.Allocation, error) {
	return listJSON[records.Allocation](t.tx, bucketAllocations)
}

// PutSandbox stores s under s.ID.
func (t *Tx) PutSandbox(s records.SandboxRecord) error {
	if err := requireKey("sandbox", s.ID); err != nil {
		return err
	}
	return putJSON(t.tx, bucketSandboxes, []byte(s.ID), s)
}

// GetSandbox returns the sandbox record; ErrNotFound when absent.
func (t *Tx) GetSandbox(id string) (records.SandboxRecord, error) {
	var s records.SandboxRecord
	ok, err := getJSON(t.tx, bucketSandboxes, []byte(id), &s)
	if err == nil && !ok {
		err = fmt.Errorf("sandbox %q: %w", id, ErrNotFound)
	}
	return s, err
}

// DeleteSandbox removes the sandbox record; absent is fine.
func (t *Tx) DeleteSandbox(id string) error {
	return deleteKey(t.tx, bucketSandboxes, []byte(id))
}

// ListSandboxes returns every sandbox record, ordered by ID.
func (t *Tx) ListSandboxes() ([]records.SandboxRecord, error) {
	return listJSON[records.SandboxRecord](t.tx, bucketSandboxes)
}

// PodSandboxes returns the sandbox records of one pod, ordered by ID. Only
// records whose raw JSON contains the UID are decoded, so a sync of one pod
// does not decode every pod's records.
func (t *Tx) PodSandboxes(uid types.UID) ([]records.SandboxRecord, error) {
	out := []records.SandboxRecord{}
	if uid == "" {
		return out, nil
	}
	needle := []byte(uid)
	err := t.tx.Bucket(bucketSandboxes).ForEach(func(k, raw []byte) error {
		if raw == nil || !bytes.Contains(raw, needle) {
			return nil
		}
		var r records.SandboxRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("decode %s/%s: %w", bucketSandboxes, k, err)
		}
		if r.PodUID == uid {
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// PutStatus stores the last computed status of a pod.
func (t *Tx) PutStatus(uid types.UID, s corev1.PodStatus) error {
	if err := requireKey("status", string(uid)); err != nil {
		return err
	}
	return putJSON(t.tx, bucketStatuses, []byte(uid), s)
}

// GetStatus returns the stored status; ErrNotFound when absent.
func (t *Tx) GetStatus(uid types.UID) (corev1.PodStatus, error) {
	var s corev1.PodStatus
	ok, err := getJSON(t.tx, bucketStatuses, []byte(uid), &s)
	if err == nil && !ok {
		err = fmt.Errorf("status of pod %q: %w", uid, ErrNotFound)
	}
	return s, err
}

// DeleteStatus removes the stored status; absent is fine.
func (t *Tx) DeleteStatus(uid types.UID) error {
	return deleteKey(t.tx, bucketStatuses, []byte(uid))
}

// ListStatuses returns every stored status by pod UID.
func (t *Tx) ListStatuses() (map[types.UID]corev1.PodStatus, error) {
	out := map[types.UID]corev1.PodStatus{}
	err := t.tx.Bucket(bucketStatuses).ForEach(func(k, _ []byte) error {
		s, err := t.GetStatus(types.UID(k))
		out[types.UID(k)] = s
		return err
	})
	return out, err
}

// PurgePod deletes everything stored under a pod UID: worker, allocation,
// status and user namespace range. Its events stay (as the API server
// keeps a deleted pod's events): ExpireEvents removes them an hour after
// the last one. Sandbox records are keyed by sandbox id and are not
// touched: they go only after their teardown (CNI DEL) succeeded.
func (t *Tx) PurgePod(uid types.UID) error {
	for _, del := range []func(types.UID) error{t.DeleteWorker, t.DeleteAllocation, t.DeleteStatus, t.DeleteUserNS} {
		if err := del(uid); err != nil {
			return err
		}
	}
	return nil
}

// RecordedPods returns every pod UID PurgePod would find something of: a
// worker record, an allocation, a status or a user namespace range.
func (t *Tx) RecordedPods() (map[types.UID]bool, error) {
	out := map[types.UID]bool{}
	for _, b := range [][]byte{bucketWorkers, bucketAllocations, bucketStatuses, bucketUserNS} {
		err := t.tx.Bucket(b).ForEach(func(k, _ []byte) error {
			out[types.UID(k)] = true
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", b, err)
		}
	}
	return out, nil
}

// updateKeyed stores each record of put under its key and deletes the keys
// in del, in one commit shared with concurrent callers (batch).
func updateKeyed[T any](db *DB, bucket []byte, kind string, key func(T) string, put []T, del []string) error {
	for _, r := range put {
		if err := requireKey(kind, key(r)); err != nil {
			return err
		}
	}
	if len(put) == 0 && len(del) == 0 {
		return nil
	}
	return db.batch(func(tx *Tx) error {
		for _, k := range del {
			if err := deleteKey(tx.tx, bucket, []byte(k)); err != nil {
				return err
			}
		}
		for _, r := range put {
			if err := putJSON(tx.tx, bucket, []byte(key(r)), r); err != nil {
				return err
			}
		}
		return nil
	})
}
