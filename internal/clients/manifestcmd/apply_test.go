package manifestcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/clients/cmdutil"
)

func podYAML(name, image string) string {
	return podNSYAML("", name, image)
}

func podNSYAML(ns, name, image string) string {
	meta := "  name: " + name + "\n"
	if ns != "" {
		meta += "  namespace: " + ns + "\n"
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n%sspec:\n  containers:\n  - name: main\n    image: %s # pinned\n", meta, image)
}

// podAfterYAML is a pod that starts after the pods named in after.
func podAfterYAML(name, after string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  annotations:\n    podhost.io/after: %q\nspec:\n  containers:\n  - name: main\n    image: img:1\n", name, after)
}

func podJSON(name, image string) string {
	return fmt.Sprintf(`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": %q}, "spec": {"containers": [{"name": "main", "image": %q}]}}`+"\n", name, image)
}

// dirState returns name → content of every entry of dir (nil if missing).
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			out[e.Name()] = "-> " + target
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(data)
	}
	return out
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type env struct {
	manifests string // the manifest dir (may not exist)
	inputs    string // where input files live
}

func newEnv(t *testing.T, manifests, inputs map[string]string) env {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	e := env{manifests: filepath.Join(root, "manifests"), inputs: filepath.Join(root, "in")}
	if manifests != nil {
		writeFiles(t, e.manifests, manifests)
	}
	writeFiles(t, e.inputs, inputs)
	return e
}

func TestApply(t *testing.T) {
	web1, web2, api1 := podYAML("web", "img:1"), podYAML("web", "img:2"), podYAML("api", "img:1")
	webLabeled := strings.Replace(web1, "metadata:\n", "metadata:\n  labels: {tier: front}\n", 1)
	tests := []struct {
		name      string
		manifests map[string]string // nil: the manifest dir does not exist
		inputs    map[string]string
		files     []string // -f, relative to the input dir ("-" = stdin)
		stdin     string
		dryRun    cmdutil.DryRun
		namespace string // -n
		wantOut   string
		want      map[string]string // manifest dir after
		wantErr   []string          // error lines (substrings)
	}{
		{
			name: "created in a new dir", inputs: map[string]string{"x.yaml": web1}, files: []string{"x.yaml"},
			wantOut: "pod/web created\n", want: map[string]string{"web.yaml": web1},
		},
		{
			name: "after a pod in the dir", manifests: map[string]string{"db.yaml": podYAML("db", "img:1")},
			inputs: map[string]string{"app.yaml": podAfterYAML("app", "db")}, files: []string{"app.yaml"},
			wantOut: "pod/app created\n", want: map[string]string{"db.yaml": podYAML("db", "img:1"), "app.yaml": podAfterYAML("app", "db")},
		},
		{
			name: "after a missing pod", manifests: map[string]string{},
			inputs: map[string]string{"app.yaml": podAfterYAML("app", "db")}, files: []string{"app.yaml"},
			want: map[string]string{}, wantErr: []string{"app.yaml: pod default/app: podhost.io/after: pod default/db not found"},
		},
		{
			name: "cycle with the dir", manifests: map[string]string{"db.yaml": podAfterYAML("db", "app")},
			inputs: map[string]string{"app.yaml": podAfterYAML("app", "db")}, files: []string{"app.yaml"},
			want:    map[string]string{"db.yaml": podAfterYAML("db", "app")},
			wantErr: []string{"app.yaml: pod default/app: podhost.io/after: dependency cycle app -> db -> app"},
		},
		{
			name: "unchanged", manifests: map[string]string{"mine.yaml": web1}, inputs: map[string]string{"x.yaml": web1}, files: []string{"x.yaml"},
			wantOut: "pod/web unchanged\n", want: map[string]string{"mine.yaml": web1},
		},
		{
			name: "replaced (another image) in its current file", manifests: map[string]string{"mine.yaml": web1}, inputs: map[string]string{"x.yaml": web2}, files: []string{"x.yaml"},
			wantOut: "pod/web replaced\n", want: map[string]string{"mine.yaml": web2},
		},
		{
			name: "configured: a label edit keeps the pod", manifests: map[string]string{"mine.yaml": web1}, inputs: map[string]string{"x.yaml": webLabeled}, files: []string{"x.yaml"},
			wantOut: "pod/web configured\n", want: map[string]string{"mine.yaml": webLabeled},
		},
		{
			name:      "multi-doc file: only that doc replaced",
			manifests: map[string]string{"all.yaml": "# my pods\n" + api1 + "---\n" + web1 + "---\n" + podYAML("db", "img:1")},
			inputs:    map[string]string{"x.yaml": web2}, files: []string{"x.yaml"},
			wantOut: "pod/web replaced\n",
			want:    map[string]string{"all.yaml": "# my pods\n" + api1 + "---\n" + web2 + "---\n" + podYAML("db", "img:1")},
		},
		{
			name: "namespaced file name", manifests: map[string]string{}, inputs: map[string]string{"x.yaml": podNSYAML("infra", "dns", "img:1")}, files: []string{"x.yaml"},
			wantOut: "pod/dns created\n", want: map[string]string{"infra_dns.yaml": podNSYAML("infra", "dns", "img:1")},
		},
		{
			name: "name clash uses the namespaced name", manifests: map[string]string{"web.yaml": api1}, inputs: map[string]string{"x.yaml": web1}, files: []string{"x.yaml"},
			wantOut: "pod/web created\n", want: map[string]string{"web.yaml": api1, "default_web.yaml": web1},
		},
		{
			name: "JSON kept as JSON", inputs: map[string]string{"x.json": podJSON("web", "img:1")}, files: []string{"x.json"},
			wantOut: "pod/web created\n", want: map[string]string{"web.json": podJSON("web", "img:1")},
		},
		{
			name: "YAML into an existing JSON file is converted", manifests: map[string]string{"web.json": podJSON("web", "img:1")},
			inputs: map[string]string{"x.yaml": web2}, files: []string{"x.yaml"}, wantOut: "pod/web replaced\n",
			want: map[string]string{"web.json": "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n  \"metadata\": {\n    \"name\": \"web\"\n  },\n  \"spec\": {\n    \"containers\": [\n      {\n        \"image\": \"img:2\",\n        \"name\": \"main\"\n      }\n    ]\n  }\n}\n"},
		},
		{
			name: "multi-doc input: one file per pod", inputs: map[string]string{"x.yaml": web1 + "---\n" + api1}, files: []string{"x.yaml"},
			wantOut: "pod/web created\npod/api created\n", want: map[string]string{"web.yaml": web1, "api.yaml": api1},
		},
		{
			name: "dir input and stdin", manifests: map[string]string{"web.yaml": web1},
			inputs: map[string]string{"d/a.yaml": api1, "d/web.yaml": web2, "d/.hidden.yaml": "garbage", "d/notes.txt": "x"},
			files:  []string{"d", "-"}, stdin: podYAML("db", "img:1"),
			wantOut: "pod/api created\npod/web replaced\npod/db created\n",
			want:    map[string]string{"web.yaml": web2, "api.yaml": api1, "db.yaml": podYAML("db", "img:1")},
		},
		{
			name: "dry run writes nothing", inputs: map[string]string{"x.yaml": web1}, files: []string{"x.yaml"}, dryRun: cmdutil.DryRunClient,
			wantOut: "pod/web created (dry run)\n", want: nil,
		},
		{
			name: "dry run replaced", manifests: map[string]string{"web.yaml": web1}, inputs: map[string]string{"x.yaml": web2}, files: []string{"x.yaml"}, dryRun: cmdutil.DryRunServer,
			wantOut: "pod/web replaced (server dry run)\n", want: map[string]string{"web.yaml": web1},
		},
		{
			name: "-n: written into a document naming no namespace", inputs: map[string]string{"x.yaml": "# the web pod\n" + web1}, files: []string{"x.yaml"}, namespace: "infra",
			wantOut: "pod/web created\n",
			want:    map[string]string{"infra_web.yaml": "# the web pod\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: infra\nspec:\n  containers:\n    - name: main\n      image: img:1 # pinned\n"},
		},
		{
			name: "-n: a JSON document stays JSON", inputs: map[string]string{"x.json": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"main","image":"img:1"}]}}`},
			files: []string{"x.json"}, namespace: "infra", wantOut: "pod/web created\n",
			want: map[string]string{"infra_web.json": "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n  \"metadata\": {\n    \"name\": \"web\",\n    \"namespace\": \"infra\"\n  },\n  \"spec\": {\n    \"containers\": [\n      {\n        \"image\": \"img:1\",\n        \"name\": \"main\"\n      }\n    ]\n  }\n}\n"},
		},
		{
			name: "-n: another namespace is kubectl's error", inputs: map[string]string{"x.yaml": podNSYAML("prod", "web", "img:1")}, files: []string{"x.yaml"}, namespace: "infra",
			wantErr: []string{`x.yaml: metadata.namespace: the namespace from the provided object "prod" does not match the namespace "infra". You must pass '--namespace=prod' to perform this operation.`},
		},
		{
			name: "-n: the same namespace is unchanged", inputs: map[string]string{"x.yaml": podNSYAML("infra", "web", "img:1")}, files: []string{"x.yaml"}, namespace: "infra",
			wantOut: "pod/web created\n", want: map[string]string{"infra_web.yaml": podNSYAML("infra", "web", "img:1")},
		},
		{
			name: "all or nothing", manifests: map[string]string{"web.yaml": web1},
			inputs:  map[string]string{"a.yaml": api1, "b.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: c}]}\n", "c.yaml": web2},
			files:   []string{"a.yaml", "b.yaml", "c.yaml"},
			wantErr: []string{"b.yaml: spec.containers[0].image: Required value"},
			want:    map[string]string{"web.yaml": web1},
		},
		{
			name: "duplicate across inputs", manifests: map[string]string{},
			inputs: map[string]string{"a.yaml": web1, "b.yaml": api1 + "---\n" + web2}, files: []string{"a.yaml", "b.yaml"},
			wantErr: []string{`b.yaml: [doc 2] metadata.name: Duplicate value: "web": pod default/web is already defined in a.yaml`},
			want:    map[string]string{},
		},
		{
			name: "missing input", manifests: map[string]string{}, inputs: map[string]string{"a.yaml": web1}, files: []string{"a.yaml", "nope.yaml"},
			wantErr: []string{"nope.yaml: no such file or directory"}, want: map[string]string{},
		},
		{
			name: "empty input", manifests: map[string]string{}, inputs: map[string]string{"a.yaml": "# nothing\n"}, files: []string{"a.yaml"},
			wantErr: []string{"no objects passed to apply"}, want: map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.manifests, tt.inputs)
			var files []string
			for _, f := range tt.files {
				if f != "-" {
					f = filepath.Join(e.inputs, f)
				}
				files = append(files, f)
			}
			var out, errOut bytes.Buffer
			opts := ApplyOptions{Files: files, ManifestDir: e.manifests, DryRun: tt.dryRun, Namespace: tt.namespace}
			_, err := Apply(context.Background(), opts, cmdutil.IOStreams{In: strings.NewReader(tt.stdin), Out: &out, ErrOut: &errOut})
			checkErr(t, err, tt.wantErr)
			if out.String() != tt.wantOut {
				t.Errorf("out = %q, want %q", out.String(), tt.wantOut)
			}
			if got := dirState(t, e.manifests); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("manifest dir =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// checkErr checks that err has exactly the wanted lines (as substrings).
func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("err = %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("err = nil, want %q", want)
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("err lines = %q, want %q", lines, want)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("err line %d = %q, want containing %q", i, lines[i], w)
		}
	}
}

func TestApplyFileModeAndSymlink(t *testing.T) {
	e := newEnv(t, map[string]string{}, map[string]string{"x.yaml": podYAML("web", "img:2")})
	target := filepath.Join(filepath.Dir(e.manifests), "web-target.yaml")
	if err := os.WriteFile(target, []byte(podYAML("web", "img:1")), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(e.manifests, "web.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	opts := ApplyOptions{Files: []string{filepath.Join(e.inputs, "x.yaml")}, ManifestDir: e.manifests}
	if _, err := Apply(context.Background(), opts, cmdutil.IOStreams{Out: &out, ErrOut: &out}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("symlink replaced: %v %v", fi.Mode(), err)
	}
	data, _ := os.ReadFile(target)
	if string(data) != podYAML("web", "img:2") {
		t.Errorf("target = %q", data)
	}
	fi, err := os.Stat(target)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, %v", fi.Mode(), err)
	}
}

func TestApplyRefusesInsecureManifestDir(t *testing.T) {
	e := newEnv(t, map[string]string{}, map[string]string{"x.yaml": podYAML("web", "img:1")})
	if err := os.Chmod(e.manifests, 0o777); err != nil {
		t.Fatal(err)
	}
	opts := ApplyOptions{Files: []string{filepath.Join(e.inputs, "x.yaml")}, ManifestDir: e.manifests}
	var out bytes.Buffer
	_, err := Apply(context.Background(), opts, cmdutil.IOStreams{Out: &out, ErrOut: &out})
	if err == nil || !strings.Contains(err.Error(), "insecure permissions") {
		t.Fatalf("err = %v", err)
	}
	opts.AllowInsecure = true
	if _, err := Apply(context.Background(), opts, cmdutil.IOStreams{Out: &out, ErrOut: &out}); err != nil {
		t.Fatal(err)
	}
}

// Concurrent applies to pods of one multi-doc file must not lose updates.
func TestApplyConcurrentSameFile(t *testing.T) {
	const n = 8
	var all, want []string
	inputs := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("p%d", i)
		all = append(all, podYAML(name, "img:1"))
		want = append(want, podYAML(name, "img:2"))
		inputs[name+".yaml"] = podYAML(name, "img:2")
	}
	e := newEnv(t, map[string]string{"all.yaml": strings.Join(all, "---\n")}, inputs)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			var out bytes.Buffer
			opts := ApplyOptions{Files: []string{filepath.Join(e.inputs, fmt.Sprintf("p%d.yaml", i))}, ManifestDir: e.manifests}
			_, err := Apply(context.Background(), opts, cmdutil.IOStreams{Out: &out, ErrOut: &out})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := dirState(t, e.manifests); got["all.yaml"] != strings.Join(want, "---\n") || len(got) != 1 {
		t.Errorf("manifest dir = %q", got)
	}
}
