package source

import (
	"strings"
	"testing"
)

// A backup copy added after the original ("x-backup.yaml" sorts before
// "x.yaml") does not take the pod over: the file seen first owns it, also
// after a restart (the order is persisted), and the copy's error names
// both files. Removing the owner hands the pod to the copy.
func TestDuplicateOwnerIsFirstSeen(t *testing.T) {
	dir := secureDir(t)
	db := openStore(t)
	sc := restart(dir, db)
	writeFile(t, dir, "x.yaml", podYAML("x", "img:orig"))
	if snap, err := sc.scan(); err != nil || summary(snap) != "default/x=img:orig" {
		t.Fatalf("first scan = %q, %v", summary(snap), err)
	}
	writeFile(t, dir, "x-backup.yaml", podYAML("x", "img:backup"))
	check := func(what string, snap Snapshot) {
		t.Helper()
		if got := summary(snap); got != "default/x=img:orig ERR x-backup.yaml" {
			t.Fatalf("%s: %q, want the original's pod and an error on the backup", what, got)
		}
		msg := snap.Errors[0].Error()
		if !strings.Contains(msg, "x-backup.yaml: duplicate pod default/x, already defined in x.yaml") {
			t.Fatalf("%s: error %q does not name both files", what, msg)
		}
		if len(snap.Duplicates) != 1 || !strings.HasSuffix(snap.Duplicates[0].Owner, "/x.yaml") || !strings.HasSuffix(snap.Duplicates[0].File, "/x-backup.yaml") {
			t.Fatalf("%s: duplicates %+v", what, snap.Duplicates)
		}
	}
	snap, _ := sc.scan()
	check("backup added", snap)
	// Editing the backup changes nothing that runs.
	writeFile(t, dir, "x-backup.yaml", podYAML("x", "img:backup2"))
	snap, _ = sc.scan()
	check("backup edited", snap)
	snap, _ = restart(dir, db).scan()
	check("after a restart", snap)

	// A one-off Scan cannot know the order: name order.
	if snap, _ := Scan(dir, false); summary(snap) != "default/x=img:backup2 ERR x.yaml" {
		t.Fatalf("Scan = %q", summary(snap))
	}

	sc = restart(dir, db)
	remove(t, dir, "x.yaml")
	if snap, _ := sc.scan(); summary(snap) != "default/x=img:backup2" {
		t.Fatalf("owner removed: %q, want the backup's pod", summary(snap))
	}
	// The original added again is now the later file.
	writeFile(t, dir, "x.yaml", podYAML("x", "img:orig"))
	if snap, _ := sc.scan(); summary(snap) != "default/x=img:backup2 ERR x.yaml" {
		t.Fatalf("original back: %q", summary(snap))
	}
}

// Records of a podhost that kept no order are placed by path, before the
// files new to this start; a file with a Secret keeps its place too.
func TestDuplicateOwnerOrderPersisted(t *testing.T) {
	dir := secureDir(t)
	db := openStore(t)
	writeFile(t, dir, "b.yaml", podYAML("a", "img:b"))
	if _, err := restart(dir, db).scan(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.yaml", podYAML("a", "img:a"))
	sc := restart(dir, db)
	if snap, _ := sc.scan(); summary(snap) != "default/a=img:b ERR a.yaml" {
		t.Fatalf("stored b.yaml first: %q", summary(snap))
	}
	recs, err := db.ListManifests()
	if err != nil || len(recs) != 2 || recs[0].Seen != 2 || recs[1].Seen != 1 {
		t.Fatalf("records %+v, %v: want a.yaml seen 2nd, b.yaml 1st", recs, err)
	}
}
