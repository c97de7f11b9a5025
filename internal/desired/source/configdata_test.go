package source

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

const secretDoc = `apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: topsecret-value-42
---
`

func configMapDoc(value string, immutable bool) string {
	im := ""
	if immutable {
		im = "immutable: true\n"
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  k: \"" + value + "\"\n" + im + "---\n"
}

// A file holding a Secret: refused while world-readable (naming the file),
// read once 0600; never written to the state store, and a record an
// earlier Secret-free version left is deleted.
func TestSecretFileNotStoredNorWorldReadable(t *testing.T) {
	dir := secureDir(t)
	db := openStore(t)
	sc := restart(dir, db)
	path := writeFile(t, dir, "web.yaml", podYAML("web", "img:1"))
	if _, err := sc.scan(); err != nil {
		t.Fatal(err)
	}
	if recs, _ := db.ListManifests(); len(recs) != 1 {
		t.Fatalf("want the pod-only file stored, got %d records", len(recs))
	}
	writeFile(t, dir, "web.yaml", secretDoc+podYAML("web", "img:1"))
	snap, err := sc.scan()
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) != 1 || !strings.Contains(snap.Errors[0].Error(), "web.yaml: insecure permissions: mode 0644 is world-readable and the file holds a Secret") {
		t.Fatalf("errors = %v", snap.Errors)
	}
	if len(snap.Secrets) != 0 || len(snap.Pods) != 1 {
		t.Fatalf("refused file must keep its last good objects: %d secrets, %d pods", len(snap.Secrets), len(snap.Pods))
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	snap, err = sc.scan()
	if err != nil || len(snap.Errors) != 0 || len(snap.Secrets) != 1 || string(snap.Secrets[0].Data["password"]) != "topsecret-value-42" {
		t.Fatalf("snap = %+v, %v", snap, err)
	}
	recs, _ := db.ListManifests()
	if len(recs) != 1 || recs[0].Data != nil || recs[0].Seen == 0 {
		t.Errorf("a file with a Secret must be stored without its content (only its place); %+v", recs)
	}
	_ = db.Close()
	raw, err := os.ReadFile(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("topsecret-value-42")) {
		t.Error("the Secret value is in state.db")
	}
}

// An immutable ConfigMap cannot change: the edit is a file error and the
// old content stays; a mutable one changes and yields a new snapshot key.
func TestConfigMapImmutableAndChange(t *testing.T) {
	dir := secureDir(t)
	sc := newScanner(dir, false)
	writeFile(t, dir, "cm.yaml", configMapDoc("one", false))
	s1, _ := sc.scan()
	writeFile(t, dir, "cm.yaml", configMapDoc("two", true))
	s2, _ := sc.scan()
	if s1.key() == s2.key() || len(s2.ConfigMaps) != 1 || s2.ConfigMaps[0].Data["k"] != "two" {
		t.Fatalf("a changed ConfigMap must change the snapshot: %+v", s2)
	}
	writeFile(t, dir, "cm.yaml", configMapDoc("three", true))
	s3, _ := sc.scan()
	if len(s3.Errors) != 1 || !strings.Contains(s3.Errors[0].Error(), "cm.yaml: ConfigMap default/app is immutable") {
		t.Fatalf("errors = %v", s3.Errors)
	}
	if len(s3.ConfigMaps) != 1 || s3.ConfigMaps[0].Data["k"] != "two" {
		t.Fatalf("the old content must stay: %+v", s3.ConfigMaps)
	}
	writeFile(t, dir, "other.yaml", configMapDoc("dup", false))
	s4, _ := sc.scan()
	if len(s4.ConfigMaps) != 1 || len(s4.Errors) != 2 || !strings.Contains(s4.Errors[1].Error(), "other.yaml: duplicate ConfigMap default/app, already defined in cm.yaml") {
		t.Fatalf("duplicate: %+v", s4.Errors)
	}
}
