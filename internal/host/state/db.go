package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// lockTimeout bounds how long Open waits for bbolt's exclusive file lock.
const lockTimeout = time.Second

var (
	// ErrLocked: another process (another podhost) holds the database.
	ErrLocked = errors.New("state db locked by another podhost")
	// ErrSchemaTooNew: the file was written by a newer podhost.
	ErrSchemaTooNew = errors.New("state db schema is newer than this podhost supports")
	// ErrNotFound: no record under that key.
	ErrNotFound = errors.New("not found")
)

// Bucket names (see the package documentation for the schema).
var (
	bucketMeta        = []byte("meta")
	bucketWorkers     = []byte("workers")
	bucketAllocations = []byte("allocations")
	bucketSandboxes   = []byte("sandboxes")
	bucketStatuses    = []byte("statuses")
	bucketEvents      = []byte("events")
	bucketManifests   = []byte("manifests")
	bucketRollouts    = []byte("rollouts")

	keySchemaVersion = []byte("schemaVersion")
	keyBootID        = []byte("bootID")
)

// migration turns a file at version-1 into version.
type migration struct {
	version int
	name    string
	apply   func(tx *bolt.Tx) error
}

// migrations, in order, one per version. Append only; never edit a released step.
var migrations = []migration{
	{version: 1, name: "initial buckets", apply: migrateV1},
	{version: 2, name: "last good manifests", apply: migrateV2},
	{version: 3, name: "pod identities", apply: migrateV3},
	{version: 4, name: "rollout histories", apply: migrateV4},
	{version: 5, name: "pod log removals", apply: migrateV5},
	{version: 6, name: "pod user namespaces", apply: migrateV6},
	{version: 7, name: "emptyDir project quotas", apply: migrateV7},
	{version: 8, name: "jobs removed after their TTL", apply: migrateV8},
	{version: 9, name: "cronjob schedules", apply: migrateV9},
}

// SchemaVersion is the newest schema this binary reads and writes.
var SchemaVersion = migrations[len(migrations)-1].version

func migrateV1(tx *bolt.Tx) error {
	for _, b := range [][]byte{bucketMeta, bucketWorkers, bucketAllocations, bucketSandboxes, bucketStatuses, bucketEvents} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	return nil
}

// DB is the open state database. It is safe for concurrent use.
type DB struct {
	bolt   *bolt.DB
	path   string
	fresh  bool // the file had no schema yet when opened (new, empty or replaced)
	health writeHealth
	// batching counts the callers inside batch: one alone commits at once.
	batching atomic.Int32
}

// Open opens (creating if needed) the state database at path and migrates it
// to SchemaVersion. It fails fast with ErrLocked when another process holds
// the file, and with ErrSchemaTooNew when the file is newer than this binary.
func Open(path string) (*DB, error) { return open(path, lockTimeout) }

func open(path string, timeout time.Duration) (*DB, error) {
	db, err := openBolt(path, timeout)
	if err != nil {
		return nil, err
	}
	if err := db.migrate(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// openBolt opens the file (no migration: nothing is written yet).
func openBolt(path string, timeout time.Duration) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state db dir: %w", err)
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if err == nil {
		// Coalesce concurrent single-record writes quickly (batch): a
		// pod's sandbox setup waits on three of them in a row.
		bdb.MaxBatchDelay = 2 * time.Millisecond
	}
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (is another podhost running?)", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open state db %s: %w", path, err)
	}
	return &DB{bolt: bdb, path: path}, nil
}

// migrate brings the file to SchemaVersion and notes whether it was fresh.
func (db *DB) migrate() error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		cur, err := schemaVersion(tx)
		db.fresh = err == nil && cur == 0
		return migrate(tx)
	})
	if err != nil {
		return fmt.Errorf("%s: %w", db.path, err)
	}
	return nil
}

// migrate brings the file to SchemaVersion in the caller's transaction.
func migrate(tx *bolt.Tx) error {
	cur, err := schemaVersion(tx)
	if err != nil {
		return err
	}
	if cur > SchemaVersion {
		return fmt.Errorf("%w: file has version %d, this podhost knows up to %d", ErrSchemaTooNew, cur, SchemaVersion)
	}
	for _, m := range migrations {
		if m.version <= cur {
			continue
		}
		if err := m.apply(tx); err != nil {
			return fmt.Errorf("migration to v%d (%s): %w", m.version, m.name, err)
		}
		cur = m.version
	}
	v, _ := json.Marshal(cur)
	return tx.Bucket(bucketMeta).Put(keySchemaVersion, v)
}

// schemaVersion reads meta/schemaVersion; 0 for a new file.
func schemaVersion(tx *bolt.Tx) (int, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, nil
	}
	raw := meta.Get(keySchemaVersion)
	if raw == nil {
		return 0, nil
	}
	var v int
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("decode schemaVersion %q: %w", raw, err)
	}
	return v, nil
}

// Fresh tells whether the file held no schema when it was opened: it was
// just created (new, deleted, empty, or replaced by OpenRecover).
func (db *DB) Fresh() bool { return db.fresh }

// Path is the file the DB was opened from.
func (db *DB) Path() string { return db.path }

// Close releases the file lock.
func (db *DB) Close() error { return db.bolt.Close() }

// Tx is one read-write or read-only transaction; see DB.Update and DB.View.
// A Tx must not be used after the function it was passed to returns.
type Tx struct{ tx *bolt.Tx }

// Update runs fn in one read-write transaction: all of fn's changes commit
// together, or none (fn returned an error or panicked).
func (db *DB) Update(fn func(tx *Tx) error) error {
	var fnErr error
	err := db.bolt.Update(func(btx *bolt.Tx) error { fnErr = fn(&Tx{tx: btx}); return fnErr })
	db.health.note(err, fnErr)
	return err
}

// batch runs fn in a read-write transaction shared with concurrent callers
// (bolt.DB.Batch): one commit for all of them. A caller with no other
// batch call in flight commits at once (Update): Batch would hold it for
// MaxBatchDelay, waiting for company that is not coming — a pod added to
// an idle daemon waits on four such writes in a row. fn may run more than
// once (Batch retries it alone when another fn of its batch failed).
func (db *DB) batch(fn func(tx *Tx) error) error {
	defer db.batching.Add(-1)
	if db.batching.Add(1) == 1 {
		return db.Update(fn)
	}
	var fnErr error
	err := db.bolt.Batch(func(btx *bolt.Tx) error { fnErr = fn(&Tx{tx: btx}); return fnErr })
	db.health.note(err, fnErr)
	return err
}

// View runs fn in one read-only transaction (a consistent snapshot).
func (db *DB) View(fn func(tx *Tx) error) error {
	return db.bolt.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx}) })
}

// SchemaVersion reports the version recorded in the file.
func (db *DB) SchemaVersion() (int, error) {
	var v int
	err := db.bolt.View(func(tx *bolt.Tx) error {
		var err error
		v, err = schemaVersion(tx)
		return err
	})
	return v, err
}

// BootID returns the recorded boot id, "" if never set.
func (db *DB) BootID() (string, error) {
	var id string
	err := db.View(func(tx *Tx) error {
		_, err := getJSON(tx.tx, bucketMeta, keyBootID, &id)
		return err
	})
	return id, err
}

// SetBootID records the boot id.
func (db *DB) SetBootID(id string) error {
	return db.Update(func(tx *Tx) error { return putJSON(tx.tx, bucketMeta, keyBootID, id) })
}

func putJSON(tx *bolt.Tx, bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%s: %w", bucket, key, err)
	}
	if err := tx.Bucket(bucket).Put(key, raw); err != nil {
		return fmt.Errorf("put %s/%s: %w", bucket, key, err)
	}
	return nil
}

// getJSON decodes bucket/key into v; false when the key is absent.
func getJSON(tx *bolt.Tx, bucket, key []byte, v any) (bool, error) {
	raw := tx.Bucket(bucket).Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("decode %s/%s: %w", bucket, key, err)
	}
	return true, nil
}

// listJSON decodes every value of bucket, in key order (nested buckets skipped).
func listJSON[T any](tx *bolt.Tx, bucket []byte) ([]T, error) {
	out := []T{}
	err := tx.Bucket(bucket).ForEach(func(k, raw []byte) error {
		if raw == nil {
			return nil
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("decode %s/%s: %w", bucket, k, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

func deleteKey(tx *bolt.Tx, bucket, key []byte) error {
	if err := tx.Bucket(bucket).Delete(key); err != nil {
		return fmt.Errorf("delete %s/%s: %w", bucket, key, err)
	}
	return nil
}
