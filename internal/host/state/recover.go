package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Recovery says what OpenRecover did with a damaged file. It is also kept
// as a note next to the file (NotePath), so `podhost check` can report it.
type Recovery struct {
	At          time.Time `json:"at"`
	Reason      string    `json:"reason"`                // why the state was rebuilt
	DamagedCopy string    `json:"damagedCopy,omitempty"` // where the damaged file was moved ("" = nothing was damaged)
	Adopted     int       `json:"adopted,omitempty"`     // pods whose records were rebuilt from containerd
}

// corruptSuffix is inserted between the db file name and the UTC time.
const corruptSuffix = ".corrupt-"

// NotePath is the recovery note of the db at dbPath.
func NotePath(dbPath string) string { return dbPath + ".recovered" }

// OpenRecover opens the state db at path like Open, but never needs a human
// when the file is damaged: an open error, a failed consistency check
// (bolt's Tx.Check) or a panic inside bbolt moves the file aside as
// <path>.corrupt-<UTC time>, creates a fresh db, records a note (NotePath)
// and returns what happened (nil when the file was fine). ErrLocked,
// ErrSchemaTooNew and OS errors (permissions, I/O) stay errors: the file is
// not damaged, or moving it would not help.
func OpenRecover(path string) (*DB, *Recovery, error) {
	db, err := openChecked(path, lockTimeout)
	if err == nil || !isDamage(err) {
		return db, nil, err
	}
	at := time.Now().UTC()
	moved := path + corruptSuffix + at.Format("20060102T150405.000000000Z")
	if rerr := os.Rename(path, moved); rerr != nil {
		return nil, nil, fmt.Errorf("state db %s damaged (%v); move it aside: %w", path, err, rerr)
	}
	rec := &Recovery{At: at, Reason: fmt.Sprintf("state db damaged: %v", err), DamagedCopy: moved}
	db, ferr := open(path, lockTimeout)
	if ferr != nil {
		return nil, rec, fmt.Errorf("state db %s: fresh db after moving the damaged one to %s: %w", path, moved, ferr)
	}
	if nerr := WriteNote(path, *rec); nerr != nil {
		_ = db.Close()
		return nil, rec, nerr
	}
	return db, rec, nil
}

// openChecked opens the file, reads every page it references and runs
// bbolt's consistency check. A panic inside bbolt, and a memory fault on
// its mmap (a page beyond the end of a truncated file raises SIGBUS), are
// turned into errors: both happen in this goroutine, which reads every
// reachable page before bbolt's Check (another goroutine) touches them.
func openChecked(path string, timeout time.Duration) (db *DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			// A bbolt panic may leave the file open (and locked) in this
			// process; the file is moved aside, so the leak is harmless.
			if db != nil {
				_ = db.Close()
			}
			db, err = nil, &damageError{fmt.Errorf("open state db %s: panic in bbolt: %v", path, p)}
		}
	}()
	db, err = openBolt(path, timeout)
	if err != nil {
		return nil, err
	}
	if db, err = extendCut(db, timeout); err != nil {
		return nil, err
	}
	if err := db.check(); err != nil {
		_ = db.Close()
		return nil, &damageError{fmt.Errorf("state db %s: consistency check: %w", path, err)}
	}
	if err := db.migrate(); err != nil { // after the check: a damaged file is kept as found
		_ = db.Close()
		if writeDamage(err) {
			return nil, &damageError{fmt.Errorf("state db %s: migration write: %w", path, err)}
		}
		return nil, err
	}
	// A file can pass the check and still refuse every write (a cut that
	// left valid meta pages but a high-water mark beyond the end: "file
	// too large"): one small write proves it usable. A full disk is not
	// damage (the daemon reports it and it clears by itself).
	if err := db.ProbeWrite(); writeDamage(err) {
		_ = db.Close()
		return nil, &damageError{fmt.Errorf("state db %s: test write: %w", path, err)}
	}
	return db, nil
}

// extendCut reopens db's file extended with zeros to bbolt's high-water
// mark when it is shorter (a power loss or a copy cut it). bbolt maps only
// the file's length, so a free page past the end would later be written
// with pwrite and read back through the map beyond its end: garbage, a
// SIGBUS, a panic in a batch goroutine — at every start. Extended, a free
// page there is harmless and a reachable one reads as zeros, which the
// consistency check then reports as damage.
func extendCut(db *DB, timeout time.Duration) (*DB, error) {
	var want int64
	_ = db.bolt.View(func(tx *bolt.Tx) error { want = tx.Size(); return nil })
	fi, err := os.Stat(db.path)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("state db %s: %w", db.path, err)
	}
	if fi.Size() >= want {
		return db, nil
	}
	path := db.path
	_ = db.Close()
	slog.Warn("state db shorter than its high-water mark (cut by a power loss?): extended with zeros before the consistency check",
		"path", path, "size", fi.Size(), "highWater", want)
	if err := os.Truncate(path, want); err != nil {
		return nil, fmt.Errorf("state db %s: extend to %d bytes: %w", path, want, err)
	}
	return openBolt(path, timeout)
}

// writeDamage: a failed write that says the file is unusable — anything
// but a full disk or a newer schema.
func writeDamage(err error) bool {
	return err != nil && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EDQUOT) && !errors.Is(err, ErrSchemaTooNew)
}

// check reads every key and value (so every reachable page) and then runs
// bbolt's consistency check; it returns the first errors found.
func (db *DB) check() error {
	var errs []error
	err := db.bolt.View(func(tx *bolt.Tx) error {
		if err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return readAll(b) }); err != nil {
			return err
		}
		for e := range tx.Check() {
			if len(errs) < 3 {
				errs = append(errs, e)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

// readAll touches every byte of every key and value below b.
func readAll(b *bolt.Bucket) error {
	var sum byte
	return b.ForEach(func(k, v []byte) error {
		for _, c := range k {
			sum ^= c
		}
		if v == nil {
			if nb := b.Bucket(k); nb != nil {
				return readAll(nb)
			}
		}
		for _, c := range v {
			sum ^= c
		}
		return nil
	})
}

// damageError marks an error found by the check or a recovered panic.
type damageError struct{ err error }

func (e *damageError) Error() string { return e.err.Error() }
func (e *damageError) Unwrap() error { return e.err }

// isDamage tells whether err means the file itself is unusable (so moving it
// aside and starting fresh is the repair), as opposed to a lock held by
// another podhost, a newer schema, or an OS error on the path.
func isDamage(err error) bool {
	var d *damageError
	switch {
	case errors.As(err, &d):
		return true
	case errors.Is(err, ErrLocked), errors.Is(err, ErrSchemaTooNew):
		return false
	case errors.Is(err, fs.ErrPermission):
		return false
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != syscall.EINVAL {
		return false // I/O, no space, read-only file system...
	}
	return true
}

// WriteNote records r next to the db at dbPath (replacing an older note).
func WriteNote(dbPath string, r Recovery) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode recovery note: %w", err)
	}
	tmp := NotePath(dbPath) + ".tmp"
	if err := os.WriteFile(tmp, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("write recovery note: %w", err)
	}
	if err := os.Rename(tmp, NotePath(dbPath)); err != nil {
		return fmt.Errorf("write recovery note: %w", err)
	}
	return nil
}

// ReadNote returns the recovery note of the db at dbPath; nil, nil when
// there is none.
func ReadNote(dbPath string) (*Recovery, error) {
	raw, err := os.ReadFile(NotePath(dbPath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read recovery note: %w", err)
	}
	var r Recovery
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decode recovery note %s: %w", NotePath(dbPath), err)
	}
	return &r, nil
}

// DamagedCopies lists the damaged files OpenRecover moved aside next to the
// db at dbPath, oldest first.
func DamagedCopies(dbPath string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Dir(dbPath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list damaged state db copies: %w", err)
	}
	var out []string
	prefix := filepath.Base(dbPath) + corruptSuffix
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, filepath.Join(filepath.Dir(dbPath), e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}
