package manifestcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
)

// get configmaps|secrets reads the manifest dir; Secret values are never
// printed, in any output format.
func TestGetConfigData(t *testing.T) {
	all := cmYAML("one", false) + "---\n" + secretYAML
	e := newEnv(t, map[string]string{}, map[string]string{"all.yaml": all})
	var out bytes.Buffer
	if _, err := Apply(context.Background(), ApplyOptions{Files: []string{filepath.Join(e.inputs, "all.yaml")}, ManifestDir: e.manifests},
		cmdutil.IOStreams{Out: &out, ErrOut: &out}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ resource, name, output, want string }{
		{"configmaps", "", "", "NAMESPACE   NAME   DATA\ndefault     app    1\n"},
		{"secrets", "", "", "NAMESPACE   NAME    TYPE     DATA\ndefault     creds   Opaque   1\n"},
		{"secrets", "creds", "name", "secret/creds\n"},
		{"secrets", "creds", "yaml", "pw: null"},
		{"secrets", "", "json", `"pw": null`},
		{"configmaps", "app", "yaml", "k: one"},
	} {
		var o bytes.Buffer
		err := GetData(GetDataOptions{Resource: tc.resource, ManifestDir: e.manifests, Names: strings.Fields(tc.name), Output: tc.output}, cmdutil.IOStreams{Out: &o, ErrOut: &o})
		if err != nil || !strings.Contains(o.String(), tc.want) {
			t.Errorf("get %s %s -o %s = %q, %v; want %q", tc.resource, tc.name, tc.output, o.String(), err, tc.want)
		}
		if strings.Contains(o.String(), "s3cr3t") || strings.Contains(o.String(), "czNjcjN0") {
			t.Errorf("get %s -o %s printed the Secret value", tc.resource, tc.output)
		}
	}
	var noHeaders bytes.Buffer
	if err := GetData(GetDataOptions{Resource: "configmaps", ManifestDir: e.manifests, NoHeaders: true}, cmdutil.IOStreams{Out: &noHeaders, ErrOut: &noHeaders}); err != nil ||
		noHeaders.String() != "default   app   1\n" {
		t.Errorf("get configmaps --no-headers = %q, %v", noHeaders.String(), err)
	}
	if err := GetData(GetDataOptions{Resource: "secrets", ManifestDir: e.manifests, Names: []string{"nope"}}, cmdutil.IOStreams{Out: &out, ErrOut: &out}); err == nil ||
		err.Error() != `secrets "nope" not found` {
		t.Errorf("missing: %v", err)
	}
}

// describe configmap shows its values; describe secret only sizes.
func TestDescribeData(t *testing.T) {
	all := cmYAML("one", false) + "---\n" + secretYAML
	e := newEnv(t, map[string]string{}, map[string]string{"all.yaml": all})
	var out bytes.Buffer
	streams := cmdutil.IOStreams{Out: &out, ErrOut: &out}
	if _, err := Apply(context.Background(), ApplyOptions{Files: []string{filepath.Join(e.inputs, "all.yaml")}, ManifestDir: e.manifests}, streams); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := DescribeData(GetDataOptions{Resource: "configmaps", ManifestDir: e.manifests, Namespace: "default", Names: []string{"app"}}, streams); err != nil ||
		!strings.Contains(out.String(), "Name:         app") || !strings.Contains(out.String(), "k:\n----\none") {
		t.Fatalf("describe configmap = %q, %v", out.String(), err)
	}
	out.Reset()
	if err := DescribeData(GetDataOptions{Resource: "secrets", ManifestDir: e.manifests, Namespace: "default", Names: []string{"creds"}}, streams); err != nil ||
		!strings.Contains(out.String(), "Type:  Opaque") || !strings.Contains(out.String(), "pw:  6 bytes") {
		t.Fatalf("describe secret = %q, %v", out.String(), err)
	}
	if strings.Contains(out.String(), "s3cr3t") || strings.Contains(out.String(), "czNjcjN0") {
		t.Fatal("describe secret printed the value")
	}
	if err := DescribeData(GetDataOptions{Resource: "secrets", ManifestDir: e.manifests, Namespace: "default", Names: []string{"nope"}}, streams); err == nil {
		t.Fatal("describe of a missing secret succeeded")
	}
}

// An empty name is kubectl's "resource name may not be empty", refused
// before the manifest dir is asked (cli's TestEmptyName for pods).
func TestEmptyName(t *testing.T) {
	s := cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	for _, tc := range []struct {
		name string
		run  func(names []string) error
	}{
		{"get configmaps", func(n []string) error { return GetData(GetDataOptions{Resource: "configmaps", Names: n}, s) }},
		{"describe secrets", func(n []string) error {
			return DescribeData(GetDataOptions{Resource: "secrets", Namespace: "default", Names: n}, s)
		}},
	} {
		for _, names := range [][]string{{""}, {"web", ""}} {
			if err := tc.run(names); err == nil || err.Error() != "resource name may not be empty" {
				t.Errorf("%s %q: %v, want resource name may not be empty", tc.name, names, err)
			}
		}
	}
}

// get and describe of ConfigMaps and Secrets take several names as pods do.
func TestDataNames(t *testing.T) {
	other := strings.Replace(cmYAML("two", false), "name: app", "name: other", 1)
	e := newEnv(t, map[string]string{"app.yaml": cmYAML("one", false), "other.yaml": other, "creds.yaml": secretYAML}, map[string]string{})
	if err := os.Chmod(filepath.Join(e.manifests, "creds.yaml"), 0o600); err != nil { // a Secret's file may not be world-readable
		t.Fatal(err)
	}
	for _, tc := range []struct {
		describe  bool
		resource  string
		names     []string
		output    string
		want      []string // lines the output holds
		notWanted string
		missing   []string
	}{
		{resource: "configmaps", names: []string{"other", "app"}, output: "name", want: []string{"configmap/other\nconfigmap/app\n"}},
		{resource: "configmaps", names: []string{"nope", "app"}, want: []string{"NAMESPACE   NAME   DATA\ndefault     app    1\n"}, missing: []string{"configmaps/nope"}},
		{resource: "configmaps", names: []string{"app"}, output: "yaml", want: []string{"kind: ConfigMap"}, notWanted: "kind: List"},
		{resource: "secrets", names: []string{"creds", "nope"}, output: "yaml", want: []string{"kind: List", "pw: null"}, notWanted: "s3cr3t", missing: []string{"secrets/nope"}},
		{resource: "secrets", names: []string{"nope"}, missing: []string{"secrets/nope"}},
		{describe: true, resource: "configmaps", names: []string{"other", "nope", "app"}, want: []string{"Name:         other", "k:\n----\ntwo",
			"\n\n\nName:         app"}, missing: []string{"configmaps/nope"}},
		{describe: true, resource: "secrets", names: []string{"creds"}, want: []string{"pw:  6 bytes"}, notWanted: "s3cr3t"},
	} {
		var out bytes.Buffer
		s := cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}
		o := GetDataOptions{Resource: tc.resource, ManifestDir: e.manifests, Names: tc.names, Output: tc.output}
		err := GetData(o, s)
		if tc.describe {
			o.Namespace = "default"
			out.Reset()
			err = DescribeData(o, s)
		}
		if got := clienttest.NotFoundNames(err); !slices.Equal(got, tc.missing) {
			t.Errorf("%s %q: not found %q (%v), want %q", tc.resource, tc.names, got, err, tc.missing)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s %q -o %s lacks %q:\n%s", tc.resource, tc.names, tc.output, w, out.String())
			}
		}
		if tc.notWanted != "" && strings.Contains(out.String(), tc.notWanted) {
			t.Errorf("%s %q -o %s holds %q:\n%s", tc.resource, tc.names, tc.output, tc.notWanted, out.String())
		}
		if len(tc.missing) == len(tc.names) && out.Len() > 0 {
			t.Errorf("%s %q: output for missing names only:\n%s", tc.resource, tc.names, out.String())
		}
	}
}

// A ConfigMap name in two namespaces: get lists one namespace (-n, else
// default), without a NAMESPACE column; every namespace (Namespace "",
// -A) with it, as kubectl.
func TestDataNamespaces(t *testing.T) {
	infra := strings.Replace(cmYAML("two", false), "name: app", "name: app\n  namespace: infra", 1)
	e := newEnv(t, map[string]string{"app.yaml": cmYAML("one", false), "infra.yaml": infra}, map[string]string{})
	for _, tc := range []struct {
		ns, output string
		names      []string
		out        string
	}{
		{ns: "default", names: []string{"app"}, out: "NAME   DATA\napp    1\n"},
		{ns: "infra", output: "name", names: []string{"app"}, out: "configmap/app\n"},
		{ns: "infra", output: "yaml", names: []string{"app"}, out: "k: two"},
		{out: "NAMESPACE   NAME   DATA\ndefault     app    1\ninfra       app    1\n"},
	} {
		var out bytes.Buffer
		err := GetData(GetDataOptions{Resource: "configmaps", ManifestDir: e.manifests, Namespace: tc.ns, Names: tc.names, Output: tc.output},
			cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
		if err != nil || !strings.Contains(out.String(), tc.out) || tc.output != "yaml" && out.String() != tc.out {
			t.Errorf("get configmaps %q -n %q -o %s: %q, %v; want %q", tc.names, tc.ns, tc.output, out.String(), err, tc.out)
		}
	}
}
