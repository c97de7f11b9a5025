package state

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestWriteHealth(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if h := db.WriteHealth(); !h.OK {
		t.Fatalf("fresh db: %+v", h)
	}
	// A caller's refusal is not a failure of the db.
	refused := errors.New("refused")
	if err := db.Update(func(*Tx) error { return refused }); !errors.Is(err, refused) || !db.WriteHealth().OK {
		t.Fatalf("refusal: %v %+v", err, db.WriteHealth())
	}
	// A commit failure (as ENOSPC) is reported until a write succeeds.
	diskErr := errors.New("write state.db: no space left on device")
	db.health.note(diskErr, nil)
	h := db.WriteHealth()
	if h.OK || h.Err != diskErr.Error() || h.Since.IsZero() {
		t.Fatalf("after a failed commit: %+v", h)
	}
	db.health.note(diskErr, nil)
	if db.WriteHealth().Since != h.Since {
		t.Fatal("a second failure moved the start of the outage")
	}
	if err := db.ProbeWrite(); err != nil {
		t.Fatal(err)
	}
	if h := db.WriteHealth(); !h.OK {
		t.Fatalf("after a successful write: %+v", h)
	}
}
