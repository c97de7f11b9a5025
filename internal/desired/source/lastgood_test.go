package source

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/model/records"
)

func openStore(t *testing.T) *state.DB {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// restart simulates a new podhost: a fresh scanner on the same store.
func restart(dir string, db *state.DB) *scanner {
	sc := newScanner(dir, false)
	sc.store = db
	return sc
}

// The last good content outlives the scanner: a file that is garbage or
// half-written when podhost starts keeps its pods (same UIDs) flagged with
// the file error; a file that is gone removes its pods and its record.
func TestLastGoodSurvivesRestart(t *testing.T) {
	dir := secureDir(t)
	db := openStore(t)
	good := podYAML("web", "img:1") + "---\n" + podYAML("api", "img:1")
	path := writeFile(t, dir, "web.yaml", good)
	first, err := restart(dir, db).scan()
	if err != nil || summary(first) != "default/api=img:1 default/web=img:1" {
		t.Fatalf("first scan = %q, %v", summary(first), err)
	}
	if recs, _ := db.ListManifests(); len(recs) != 1 || recs[0].Path != path || string(recs[0].Data) != good {
		t.Fatalf("stored %+v", recs)
	}
	for name, content := range map[string]string{
		"garbage":      "\x00\xff not yaml: [",
		"half-written": good[:len(good)/2+10],
		"invalid":      podYAML("web", ""),
	} {
		t.Run(name, func(t *testing.T) {
			writeFile(t, dir, "web.yaml", content)
			snap, err := restart(dir, db).scan()
			if err != nil {
				t.Fatal(err)
			}
			want := "default/api=img:1 default/web=img:1 ERR web.yaml kept=default/web,default/api"
			if got := summary(snap); got != want {
				t.Fatalf("after restart = %q, want %q", got, want)
			}
			if snap.Pods[0].UID != first.Pods[0].UID || snap.Pods[1].UID != first.Pods[1].UID {
				t.Fatalf("kept pods changed UID: %s %s, want %s %s", snap.Pods[0].UID, snap.Pods[1].UID, first.Pods[0].UID, first.Pods[1].UID)
			}
			if recs, _ := db.ListManifests(); len(recs) != 1 || string(recs[0].Data) != good {
				t.Fatalf("an invalid file replaced the stored version: %+v", recs)
			}
		})
	}
	// A new valid version replaces the stored one.
	writeFile(t, dir, "web.yaml", podYAML("web", "img:2"))
	sc := restart(dir, db)
	if snap, _ := sc.scan(); summary(snap) != "default/web=img:2" {
		t.Fatalf("new version = %q", summary(snap))
	}
	if recs, _ := db.ListManifests(); len(recs) != 1 || string(recs[0].Data) != podYAML("web", "img:2") {
		t.Fatalf("stored after edit %+v", recs)
	}
	// Gone: pods and record removed, also across a restart.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if snap, _ := sc.scan(); summary(snap) != "" {
		t.Fatalf("after delete = %q", summary(snap))
	}
	if recs, _ := db.ListManifests(); len(recs) != 0 {
		t.Fatalf("record of a deleted file kept: %+v", recs)
	}
}

// A file deleted while podhost was stopped: its stored version must not
// bring its pods back.
func TestLastGoodFileGoneWhileStopped(t *testing.T) {
	dir := secureDir(t)
	db := openStore(t)
	path := writeFile(t, dir, "web.yaml", podYAML("web", "img:1"))
	if _, err := restart(dir, db).scan(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if snap, _ := restart(dir, db).scan(); summary(snap) != "" {
		t.Fatalf("after restart without the file = %q, want empty", summary(snap))
	}
	if recs, _ := db.ListManifests(); len(recs) != 0 {
		t.Fatalf("records %+v", recs)
	}
}

// countingStore counts the commits the scanner asks of the store.
type countingStore struct {
	*state.DB
	commits int
}

func (s *countingStore) UpdateManifests(put []records.ManifestRecord, del []string) error {
	s.commits++
	return s.DB.UpdateManifests(put, del)
}

// A scan that sees many new files, or loses them, writes once: the first
// start with many manifests waited on a commit per file before its first
// snapshot. An unchanged dir writes nothing.
func TestLastGoodOneCommitPerScan(t *testing.T) {
	dir := secureDir(t)
	store := &countingStore{DB: openStore(t)}
	sc := restart(dir, nil)
	sc.store = store
	var paths []string
	for i := range 40 {
		paths = append(paths, writeFile(t, dir, fmt.Sprintf("p%d.yaml", i), podYAML(fmt.Sprintf("p%d", i), "img:1")))
	}
	scan := func(wantCommits, wantRecords int) {
		t.Helper()
		if _, err := sc.scan(); err != nil {
			t.Fatal(err)
		}
		recs, err := store.ListManifests()
		if store.commits != wantCommits || len(recs) != wantRecords || err != nil {
			t.Fatalf("%d commits, %d records (%v); want %d, %d", store.commits, len(recs), err, wantCommits, wantRecords)
		}
	}
	scan(1, 40)
	scan(1, 40) // unchanged
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	scan(2, 0)
}

// TestLastGoodTwoDirsShareAStore: the manifest dir and the cluster's dir
// keep their records in one state db; a scan of one never forgets the
// other's, so an invalid file in either keeps its pods across a restart.
func TestLastGoodTwoDirsShareAStore(t *testing.T) {
	a, b := secureDir(t), secureDir(t)
	db := openStore(t)
	pa := writeFile(t, a, "web.yaml", podYAML("web", "img:1"))
	pb := writeFile(t, b, "api.yaml", podYAML("api", "img:1"))
	for i := 0; i < 2; i++ { // each scan forgets what is not its own: twice, interleaved
		if _, err := restart(a, db).scan(); err != nil {
			t.Fatal(err)
		}
		if _, err := restart(b, db).scan(); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := db.ListManifests()
	paths := map[string]bool{}
	for _, r := range recs {
		paths[r.Path] = true
	}
	if !paths[pa] || !paths[pb] || len(paths) != 2 {
		t.Fatalf("stored %v, want %s and %s", paths, pa, pb)
	}
	writeFile(t, b, "api.yaml", "\x00 not yaml")
	snap, err := restart(b, db).scan()
	if err != nil || summary(snap) != "default/api=img:1 ERR api.yaml kept=default/api" {
		t.Errorf("the second dir's invalid file after a restart = %q, %v", summary(snap), err)
	}
}
