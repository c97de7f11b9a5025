package state

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// populated writes a db with enough records to span several pages, closes
// it and returns its path and bytes.
func populated(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		uid := types.UID(fmt.Sprintf("uid-%03d", i))
		if err := db.PutSandbox(records.SandboxRecord{ID: fmt.Sprintf("sb-%03d", i), PodUID: uid, FullName: "ns/p",
			State: records.SandboxReady, IPs: []string{"10.88.0.1"}, CNIResult: []byte(strings.Repeat("x", 200))}); err != nil {
			t.Fatal(err)
		}
		if err := db.AddEvent(uid, records.Event{Type: "Normal", Reason: "Started", Message: strings.Repeat("m", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, raw
}

// openDamaged writes data at path, runs OpenRecover and checks its promises:
// no panic, an open usable db, and (when recovered) the damaged bytes kept
// aside and a note. It returns the Recovery.
func openDamaged(t *testing.T, path string, data []byte) *Recovery {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, rec, err := OpenRecover(path)
	if err != nil {
		t.Fatalf("OpenRecover: %v", err)
	}
	defer db.Close()
	if err := db.SetBootID("b"); err != nil { // usable
		t.Fatalf("write after recovery: %v", err)
	}
	if _, err := db.ListSandboxes(); err != nil {
		t.Fatalf("read after recovery: %v", err)
	}
	if rec == nil {
		return nil
	}
	if !db.Fresh() {
		t.Errorf("recovered db not fresh")
	}
	kept, err := os.ReadFile(rec.DamagedCopy)
	if err != nil || string(kept) != string(data) {
		t.Fatalf("damaged copy %s: %v (same bytes: %v)", rec.DamagedCopy, err, string(kept) == string(data))
	}
	note, err := ReadNote(path)
	if err != nil || note == nil || note.DamagedCopy != rec.DamagedCopy {
		t.Fatalf("note = %+v, %v; want damaged copy %s", note, err, rec.DamagedCopy)
	}
	_ = os.Remove(rec.DamagedCopy) // the next case in the same dir starts clean
	_ = os.Remove(NotePath(path))
	return rec
}

func TestOpenRecoverDamagedFiles(t *testing.T) {
	_, good := populated(t)
	garbage := make([]byte, 64<<10)
	rand.New(rand.NewSource(1)).Read(garbage)
	overMeta := append([]byte{}, good...)
	copy(overMeta[:2*4096], garbage) // both meta pages
	overFreelist := append([]byte{}, good...)
	copy(overFreelist[2*4096:4*4096], garbage) // freelist and root pages
	for _, tc := range []struct {
		name    string
		data    []byte
		recover bool
	}{
		{"random bytes", garbage, true},
		{"truncated to half", good[:len(good)/2], true},
		{"garbage over meta pages", overMeta, true},
		{"garbage over freelist pages", overFreelist, true},
		{"zero length", nil, false}, // bbolt initializes an empty file
		{"intact", good, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			rec := openDamaged(t, path, tc.data)
			if (rec != nil) != tc.recover {
				t.Fatalf("recovered = %+v, want recovery %v", rec, tc.recover)
			}
			if rec != nil && !strings.HasPrefix(filepath.Base(rec.DamagedCopy), "state.db.corrupt-") {
				t.Errorf("damaged copy %s", rec.DamagedCopy)
			}
		})
	}
}

// TestOpenRecoverTruncatedAtRandomOffsets is the fuzz-style power-loss
// case: a populated file cut at 20 seeded random offsets always opens.
func TestOpenRecoverTruncatedAtRandomOffsets(t *testing.T) {
	_, good := populated(t)
	rng := rand.New(rand.NewSource(20261123))
	dir := t.TempDir()
	for i := range 20 {
		off := rng.Intn(len(good))
		t.Run(fmt.Sprintf("offset-%d", off), func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("%02d", i), "state.db")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			rec := openDamaged(t, path, good[:off])
			if rec == nil && off != 0 {
				// bbolt may accept a cut that leaves every reachable page
				// intact; the data must then still be there.
				t.Logf("offset %d: file accepted as intact", off)
			}
		})
	}
}

func TestOpenRecoverKeepsLockedFile(t *testing.T) {
	path, good := populated(t)
	holder, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	start := time.Now()
	_, rec, err := OpenRecover(path)
	if !errors.Is(err, ErrLocked) || rec != nil {
		t.Fatalf("OpenRecover on a locked db = %+v, %v; want ErrLocked", rec, err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	copies, _ := DamagedCopies(path)
	if len(copies) != 0 {
		t.Fatalf("locked db moved aside: %v", copies)
	}
	if raw, err := os.ReadFile(path); err != nil || len(raw) != len(good) {
		t.Fatalf("locked db changed: %v", err)
	}
}

func TestOpenRecoverKeepsNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *Tx) error { return putJSON(tx.tx, bucketMeta, keySchemaVersion, SchemaVersion+1) })
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, rec, err := OpenRecover(path); !errors.Is(err, ErrSchemaTooNew) || rec != nil {
		t.Fatalf("OpenRecover = %+v, %v; want ErrSchemaTooNew", rec, err)
	}
	if copies, _ := DamagedCopies(path); len(copies) != 0 {
		t.Fatalf("newer schema moved aside: %v", copies)
	}
}

func TestDamagedCopiesAndFresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, []byte("not a db, long enough to not be empty"), 0o600); err != nil {
		t.Fatal(err)
	}
	db, rec, err := OpenRecover(path)
	if err != nil || rec == nil {
		t.Fatalf("OpenRecover = %+v, %v", rec, err)
	}
	db.Close()
	copies, err := DamagedCopies(path)
	if err != nil || len(copies) != 1 || copies[0] != rec.DamagedCopy {
		t.Fatalf("DamagedCopies = %v, %v; want [%s]", copies, err, rec.DamagedCopy)
	}
	db, rec, err = OpenRecover(path) // now intact: opened as is, not fresh
	if err != nil || rec != nil {
		t.Fatalf("reopen = %+v, %v", rec, err)
	}
	defer db.Close()
	if db.Fresh() {
		t.Errorf("reopened db reports Fresh")
	}
}

// TestOpenRecoverCutBelowHighWater: a file cut short of bbolt's high-water
// mark, with free pages past the cut, used to open fine and then fault or
// panic at a later write that reused those pages (bbolt maps only the
// file's length). Every cut must open to a db whose writes read back.
func TestOpenRecoverCutBelowHighWater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	put := func(db *DB, k string, v []byte) error {
		return db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte(k), v) })
	}
	for i := range 10 {
		mustDo(t, put(db, fmt.Sprint("k", i), []byte("v")))
	}
	mustDo(t, put(db, "big", bytes.Repeat([]byte("b"), 100<<10))) // then freed: free pages up to the high-water mark
	mustDo(t, put(db, "after", []byte("x")))
	mustDo(t, db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete([]byte("big")) }))
	for i := range 5 {
		mustDo(t, put(db, fmt.Sprint("k", i), []byte("w")))
	}
	mustDo(t, db.Close())
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	v := bytes.Repeat([]byte("c"), 30<<10)
	for off := 2 * 4096; off < len(good); off += 2048 {
		path := filepath.Join(dir, fmt.Sprint(off), "state.db")
		mustDo(t, os.MkdirAll(filepath.Dir(path), 0o700))
		mustDo(t, os.WriteFile(path, good[:off], 0o600))
		db, _, err := OpenRecover(path)
		if err != nil {
			t.Fatalf("cut at %d: %v", off, err)
		}
		for i := range 4 {
			if err := put(db, fmt.Sprint("n", i), v); err != nil {
				t.Fatalf("cut at %d: write %d: %v", off, i, err)
			}
		}
		mustDo(t, db.bolt.View(func(tx *bolt.Tx) error {
			for i := range 4 {
				if got := tx.Bucket(bucketMeta).Get([]byte(fmt.Sprint("n", i))); !bytes.Equal(got, v) {
					t.Errorf("cut at %d: n%d reads back %d bytes, not what was written", off, i, len(got))
				}
			}
			return nil
		}))
		mustDo(t, db.Close())
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
