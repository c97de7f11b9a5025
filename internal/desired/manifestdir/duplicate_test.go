package manifestdir

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An object two files declare: Apply and Delete refuse it naming both
// files and change nothing (writing or deleting either declaration would
// not do what was asked: the daemon runs the one it read first); other
// objects of the dir are not affected; the duplicate is no warning of its
// own (a one-off scan cannot say which file is refused).
func TestDuplicateRefused(t *testing.T) {
	ctx := context.Background()
	dir := newDir(t)
	orig, backup := filepath.Join(dir, "x.yaml"), filepath.Join(dir, "x-backup.yaml")
	for path, img := range map[string]string{orig: "img:orig", backup: "img:backup", filepath.Join(dir, "web.yaml"): "img:web"} {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		if name != "web" {
			name = "x"
		}
		if err := os.WriteFile(path, []byte(pod("default", name, img)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var warned []string
	opts := Options{Warn: func(l string) { warned = append(warned, l) }}
	want := "pod default/x is declared by two files of the manifest dir, " + backup + " and " + orig
	_, err := Apply(ctx, dir, decode(t, pod("default", "x", "img:new")), opts)
	if err == nil || !strings.Contains(err.Error(), "in.yaml: "+want) {
		t.Fatalf("Apply = %v, want %q", err, want)
	}
	_, err = Delete(ctx, dir, []Ref{{Kind: Pod, Namespace: "default", Name: "web"}, {Kind: Pod, Namespace: "default", Name: "x"}}, opts)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Delete = %v, want %q", err, want)
	}
	if got := entries(t, dir); strings.Join(got, " ") != "web.yaml x-backup.yaml x.yaml" {
		t.Fatalf("files after the refusals: %v", got)
	}
	if read(t, orig) != pod("default", "x", "img:orig") || read(t, backup) != pod("default", "x", "img:backup") {
		t.Fatal("a refused call changed a file")
	}
	if len(warned) != 0 {
		t.Fatalf("warnings %q", warned)
	}
	// The other pod still applies and deletes.
	if rs, err := Apply(ctx, dir, decode(t, pod("default", "web", "img:web2")), opts); err != nil || rs[0].Action != Replaced {
		t.Fatalf("Apply web = %+v, %v", rs, err)
	}
	// Removing the copy ends the refusal.
	if err := os.Remove(backup); err != nil {
		t.Fatal(err)
	}
	if rs, err := Delete(ctx, dir, []Ref{{Kind: Pod, Namespace: "default", Name: "x"}}, opts); err != nil || !rs[0].Removed {
		t.Fatalf("Delete x = %+v, %v", rs, err)
	}
}
