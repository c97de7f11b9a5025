package manifestdir

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// exported is what `get -o yaml` prints for the pod doc declares (its
// UID, defaults, podhost's annotations, a status), as apply reads it
// back: cleaned.
func exported(t *testing.T, doc string, edit func(string) string) Object {
	t.Helper()
	o := decode(t, doc)[0]
	o.Pod.Status.Phase = "Running"
	j, err := json.Marshal(o.Pod)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, edit(string(manifest.CleanExported(y))))[0]
}

// The README's round trip, get -o yaml | edit | apply: an edit that
// replaces the pod is written without the exported uid (a new UID: the
// rollout history gets a new revision and keeps the previous one); no edit
// is unchanged; a uid the file names stays.
func TestApplyExportedUID(t *testing.T) {
	ctx := context.Background()
	dir := newDir(t)
	file := filepath.Join(dir, "web.yaml")
	orig := pod("default", "web", "img:1")
	if err := os.WriteFile(file, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	old := decode(t, orig)[0].Pod.UID

	same := exported(t, orig, func(s string) string { return s })
	if same.Pod.UID != old {
		t.Fatalf("exported uid %s, want %s", same.Pod.UID, old)
	}
	if rs, err := Apply(ctx, dir, []Object{same}, Options{}); err != nil || rs[0].Action != Unchanged {
		t.Fatalf("round trip without an edit: %+v, %v", rs, err)
	}

	edited := exported(t, orig, func(s string) string { return strings.Replace(s, "img:1", "img:2", 1) })
	rs, err := Apply(ctx, dir, []Object{edited}, Options{})
	if err != nil || rs[0].Action != Replaced {
		t.Fatalf("edit: %+v, %v", rs, err)
	}
	got := read(t, file)
	if strings.Contains(got, "uid:") || !strings.Contains(got, "img:2") {
		t.Fatalf("written:\n%s\nwant the edit without the exported uid", got)
	}
	if rs[0].Object.Pod.UID == old || rs[0].Object.Pod.UID != decode(t, got)[0].Pod.UID {
		t.Fatalf("result UID %s: want the new document's, not %s", rs[0].Object.Pod.UID, old)
	}

	// A uid the user wrote pins the pod: kept.
	pinned := strings.Replace(pod("default", "web", "img:1"), "  name: web\n", "  name: web\n  uid: 11111111-2222-3333-4444-555555555555\n", 1)
	if err := os.WriteFile(file, []byte(pinned), 0o644); err != nil {
		t.Fatal(err)
	}
	edited = exported(t, pinned, func(s string) string { return strings.Replace(s, "img:1", "img:3", 1) })
	if _, err := Apply(ctx, dir, []Object{edited}, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, file); !strings.Contains(got, "uid: 11111111-2222-3333-4444-555555555555") {
		t.Fatalf("the file's own uid was dropped:\n%s", got)
	}
}
