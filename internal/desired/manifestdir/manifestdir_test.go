package manifestdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/podhost/podhost/internal/desired/podsecurity"
)

func pod(ns, name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  containers:\n  - name: main\n    image: %s\n", name, ns, image)
}

func configMap(ns, name, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  key: %q\n", name, ns, value)
}

func decode(t *testing.T, docs ...string) []Object {
	t.Helper()
	var out []Object
	for _, d := range docs {
		o, err := Decode("in.yaml", []byte(d))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

// newDir is an empty manifest dir (0755: the source refuses a dir others may write).
func newDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "manifests")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// Apply reports, per object, what it did and the file that holds it.
func TestApplyResults(t *testing.T) {
	dir := newDir(t)
	ctx := t.Context()
	rs, err := Apply(ctx, dir, decode(t, pod("default", "web", "img:1"), configMap("prod", "app", "a")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		action Action
		file   string
	}{{Created, "web.yaml"}, {Created, "prod_app.configmap.yaml"}}
	for i, w := range want {
		if rs[i].Action != w.action || rs[i].File != filepath.Join(dir, w.file) || !rs[i].Written {
			t.Errorf("result %d = %s %s written=%v, want %s %s written", i, rs[i].Action, rs[i].File, rs[i].Written, w.action, w.file)
		}
	}
	if rs[0].Object.Pod == nil || rs[0].Object.Pod.UID == "" || rs[1].Object.ConfigMap == nil {
		t.Errorf("results lack the decoded objects: %+v", rs)
	}
	if got := read(t, filepath.Join(dir, "web.yaml")); got != pod("default", "web", "img:1") {
		t.Errorf("web.yaml = %q, want the document as given", got)
	}

	rs, err = Apply(ctx, dir, decode(t, pod("default", "web", "img:2"), configMap("prod", "app", "a")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Action != Replaced || !rs[0].Written || rs[1].Action != Unchanged || rs[1].Written {
		t.Errorf("second apply = %s written=%v, %s written=%v; want replaced (another image) written, unchanged not", rs[0].Action, rs[0].Written, rs[1].Action, rs[1].Written)
	}
	if got := read(t, filepath.Join(dir, "web.yaml")); !strings.Contains(got, "img:2") {
		t.Errorf("web.yaml = %q, want img:2", got)
	}
}

// An API server's create and update: CreateOnly refuses an object that
// exists, ReplaceOnly one that does not; either way nothing is written.
func TestApplyModes(t *testing.T) {
	dir := newDir(t)
	ctx := t.Context()
	if _, err := Apply(ctx, dir, decode(t, pod("default", "web", "img:1")), Options{Mode: CreateOnly}); err != nil {
		t.Fatal(err)
	}
	before := read(t, filepath.Join(dir, "web.yaml"))
	_, err := Apply(ctx, dir, decode(t, pod("default", "web", "img:2"), pod("default", "api", "img:1")), Options{Mode: CreateOnly})
	if !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "in.yaml: pod default/web already exists") {
		t.Fatalf("create of an existing pod: %v, want ErrExists naming it", err)
	}
	_, err = Apply(ctx, dir, decode(t, pod("default", "web", "img:2"), pod("default", "api", "img:1")), Options{Mode: ReplaceOnly})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "pod default/api not found") {
		t.Fatalf("update of a missing pod: %v, want ErrNotFound naming it", err)
	}
	if got := read(t, filepath.Join(dir, "web.yaml")); got != before || len(entries(t, dir)) != 1 {
		t.Errorf("a refused apply wrote: %v, web.yaml = %q", entries(t, dir), got)
	}
	rs, err := Apply(ctx, dir, decode(t, pod("default", "web", "img:2")), Options{Mode: ReplaceOnly})
	if err != nil || rs[0].Action != Replaced {
		t.Fatalf("update: %v, %+v", err, rs)
	}
}

// A dry run plans without creating, locking or writing anything.
func TestApplyDryRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	rs, err := Apply(t.Context(), dir, decode(t, pod("default", "web", "img:1")), Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Action != Created || rs[0].Written || rs[0].File != filepath.Join(dir, "web.yaml") {
		t.Errorf("dry run = %+v", rs[0])
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dry run created the dir: %v", err)
	}
}

// A document replaced in a .json file is written as JSON, its siblings
// untouched; Lookup returns the document as the file holds it.
func TestApplyIntoJSONFileAndLookup(t *testing.T) {
	dir := newDir(t)
	file := filepath.Join(dir, "both.json")
	orig := `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v"}}` + "\n---\n" +
		`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": {"containers": [{"name": "main", "image": "img:1"}]}}` + "\n"
	if err := os.WriteFile(file, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	rs, err := Apply(t.Context(), dir, decode(t, pod("default", "web", "img:2")), Options{})
	if err != nil || rs[0].File != file || rs[0].Action != Replaced {
		t.Fatalf("apply: %v %+v", err, rs)
	}
	got := read(t, file)
	first, second, _ := strings.Cut(got, "---\n")
	if first != strings.SplitAfter(orig, "---\n")[0][:len(first)] || !strings.HasPrefix(second, "{") || !strings.Contains(second, `"image": "img:2"`) {
		t.Errorf("both.json = %q", got)
	}
	obj, where, err := Lookup(dir, Ref{Pod, "default", "web"}, Options{})
	if err != nil || where != file || string(obj.Doc) != second || obj.Pod.Spec.Containers[0].Image != "img:2" {
		t.Errorf("Lookup = %q in %s, %v", obj.Doc, where, err)
	}
	if _, _, err := Lookup(dir, Ref{Secret, "default", "web"}, Options{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup of a missing secret: %v", err)
	}
}

// Delete removes the declaring documents, and a file left empty.
func TestDelete(t *testing.T) {
	dir := newDir(t)
	multi := filepath.Join(dir, "multi.yaml")
	if err := os.WriteFile(multi, []byte(pod("default", "a", "img:1")+"---\n"+configMap("default", "b", "x")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	a, b, c := Ref{Pod, "default", "a"}, Ref{ConfigMap, "default", "b"}, Ref{Pod, "default", "c"}
	rs, err := Delete(ctx, dir, []Ref{c, a}, Options{DryRun: true})
	if err != nil || rs[0] != (Removal{Ref: c}) || rs[1] != (Removal{Ref: a, File: multi}) {
		t.Fatalf("dry run: %v %+v", err, rs)
	}
	rs, err = Delete(ctx, dir, []Ref{c, a}, Options{})
	if err != nil || rs[0] != (Removal{Ref: c}) || rs[1] != (Removal{Ref: a, File: multi, Removed: true}) {
		t.Fatalf("delete: %v %+v", err, rs)
	}
	if got := read(t, multi); got != configMap("default", "b", "x") {
		t.Errorf("multi.yaml = %q, want the ConfigMap alone", got)
	}
	if rs, err := Delete(ctx, dir, []Ref{b}, Options{}); err != nil || !rs[0].Removed {
		t.Fatalf("delete: %v %+v", err, rs)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("dir = %v, want empty", got)
	}
}

// Concurrent writers of one file (a server's requests) serialize: every
// change lands, none is lost to another's read-modify-write.
func TestConcurrentApply(t *testing.T) {
	dir := newDir(t)
	const n = 8
	var docs []string
	for i := range n {
		docs = append(docs, pod("default", fmt.Sprintf("p%d", i), "img:1"))
	}
	if err := os.WriteFile(filepath.Join(dir, "all.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		obj := decode(t, pod("default", fmt.Sprintf("p%d", i), "img:2"))
		wg.Go(func() { _, errs[i] = Apply(t.Context(), dir, obj, Options{}) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	got := read(t, filepath.Join(dir, "all.yaml"))
	if c := strings.Count(got, "img:2"); c != n {
		t.Errorf("%d of %d changes landed:\n%s", c, n, got)
	}
}

// Apply holds pods to Options.PodSecurity (the manifest dir's standard, as
// the daemon holds the dir's pods to it): a refused pod is one line naming
// its input, and nothing is written.
func TestApplyPodSecurity(t *testing.T) {
	dir := newDir(t)
	priv := pod("default", "priv", "img:1") + "    securityContext: {privileged: true}\n"
	p, err := podsecurity.New("manifestDir", "baseline", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply(t.Context(), dir, decode(t, pod("default", "web", "img:1"), priv), Options{PodSecurity: p})
	want := `in.yaml: pod default/priv violates PodSecurity "baseline:latest" (podSecurity.manifestDir): privileged (container "main" must not set securityContext.privileged=true)`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("files written: %v", names)
	}
	if _, err := Apply(t.Context(), dir, decode(t, priv), Options{}); err != nil {
		t.Errorf("the zero policy refused a privileged pod: %v", err)
	}
}
