package manifestcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/clients/cmdutil"
)

func cmYAML(value string, immutable bool) string {
	im := ""
	if immutable {
		im = "immutable: true\n"
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  k: " + value + "\n" + im
}

const secretYAML = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  pw: s3cr3t\n"

// ConfigMaps and Secrets apply like pods: created, unchanged, configured;
// a file holding a Secret is written 0600; an immutable ConfigMap cannot
// be changed (exit 1, one line naming the file, nothing written).
func TestApplyConfigData(t *testing.T) {
	all := cmYAML("one", true) + "---\n" + secretYAML + "---\n" + podYAML("web", "img:1")
	e := newEnv(t, map[string]string{}, map[string]string{"all.yaml": all, "edit.yaml": cmYAML("two", true), "sec.yaml": secretYAML})
	apply := func(file string) (string, error) {
		var out bytes.Buffer
		opts := ApplyOptions{Files: []string{filepath.Join(e.inputs, file)}, ManifestDir: e.manifests}
		_, err := Apply(context.Background(), opts, cmdutil.IOStreams{Out: &out, ErrOut: &out})
		return out.String(), err
	}
	out, err := apply("all.yaml")
	if err != nil || out != "configmap/app created\nsecret/creds created\npod/web created\n" {
		t.Fatalf("apply = %q, %v", out, err)
	}
	for name, mode := range map[string]os.FileMode{"app.configmap.yaml": 0o644, "creds.secret.yaml": 0o600, "web.yaml": 0o644} {
		fi, err := os.Stat(filepath.Join(e.manifests, name))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode(), err, mode)
		}
	}
	if out, err = apply("all.yaml"); err != nil || strings.Count(out, "unchanged") != 3 {
		t.Fatalf("re-apply = %q, %v", out, err)
	}
	before := dirState(t, e.manifests)
	out, err = apply("edit.yaml")
	if err == nil || err.Error() != "edit.yaml: configmap default/app is immutable: it cannot be changed (delete it, then apply it again)" {
		t.Fatalf("immutable edit: %q, %v", out, err)
	}
	if !reflect.DeepEqual(before, dirState(t, e.manifests)) {
		t.Error("a refused apply changed the manifest dir")
	}
	if out, err = apply("sec.yaml"); err != nil || out != "secret/creds unchanged\n" {
		t.Errorf("secret re-apply = %q, %v", out, err)
	}
}

// Bad ConfigMaps and Secrets: one line naming the file and the field, and
// nothing written.
func TestApplyConfigDataBad(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"base64", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  pw: not*base64\n",
			"bad.yaml: data[pw]: Invalid value: not valid base64 (value not shown; use stringData for plain text)"},
		{"key with slash", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a/b: x\n",
			`bad.yaml: data[a/b]: Invalid value: "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"over 1 MiB", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: " + strings.Repeat("x", 1<<20) + "\n",
			"bad.yaml: file is 1048639 bytes, more than the 1048576-byte limit for a manifest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, map[string]string{"web.yaml": podYAML("web", "img:1")}, map[string]string{"bad.yaml": tc.doc})
			before := dirState(t, e.manifests)
			var out bytes.Buffer
			_, err := Apply(context.Background(), ApplyOptions{Files: []string{filepath.Join(e.inputs, "bad.yaml")}, ManifestDir: e.manifests},
				cmdutil.IOStreams{Out: &out, ErrOut: &out})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got  %v\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "not*base64") {
				t.Error("the Secret value is in the error")
			}
			if !reflect.DeepEqual(before, dirState(t, e.manifests)) || out.Len() != 0 {
				t.Errorf("something changed or was printed: %q", out.String())
			}
		})
	}
}

// delete -f removes ConfigMaps and Secrets too.
func TestDeleteConfigDataByFile(t *testing.T) {
	all := cmYAML("one", false) + "---\n" + secretYAML + "---\n" + podYAML("web", "img:1")
	e := newEnv(t, map[string]string{}, map[string]string{"all.yaml": all, "cm.yaml": cmYAML("one", false)})
	var out bytes.Buffer
	if _, err := Apply(context.Background(), ApplyOptions{Files: []string{filepath.Join(e.inputs, "all.yaml")}, ManifestDir: e.manifests},
		cmdutil.IOStreams{Out: &out, ErrOut: &out}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := Delete(context.Background(), DeleteOptions{Files: []string{filepath.Join(e.inputs, "cm.yaml")}, ManifestDir: e.manifests}, cmdutil.IOStreams{Out: &out, ErrOut: &out})
	if err != nil || out.String() != "configmap \"app\" deleted\n" {
		t.Fatalf("delete -f = %q, %v", out.String(), err)
	}
	if _, ok := dirState(t, e.manifests)["app.configmap.yaml"]; ok {
		t.Error("the ConfigMap's file is still there")
	}
	out.Reset()
	err = Delete(context.Background(), DeleteOptions{Files: []string{filepath.Join(e.inputs, "all.yaml")}, ManifestDir: e.manifests}, cmdutil.IOStreams{Out: &out, ErrOut: &out})
	if err == nil || err.Error() != `configmaps "app" not found` || out.String() != "secret \"creds\" deleted\npod \"web\" deleted\n" {
		t.Errorf("delete -f all = %q, %v", out.String(), err)
	}
}

// delete by name: kubectl's "configmap NAME" and "secret/NAME" forms.
func TestDeleteConfigDataByName(t *testing.T) {
	all := cmYAML("one", false) + "---\n" + secretYAML + "---\n" + podYAML("web", "img:1")
	e := newEnv(t, map[string]string{}, map[string]string{"all.yaml": all})
	var out bytes.Buffer
	streams := cmdutil.IOStreams{Out: &out, ErrOut: &out}
	if _, err := Apply(context.Background(), ApplyOptions{Files: []string{filepath.Join(e.inputs, "all.yaml")}, ManifestDir: e.manifests}, streams); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"configmap", "app"}, "configmap \"app\" deleted\n"},
		{[]string{"secret/creds"}, "secret \"creds\" deleted\n"},
		{[]string{"web"}, "pod \"web\" deleted\n"},
	} {
		out.Reset()
		if err := Delete(context.Background(), DeleteOptions{Names: tc.names, ManifestDir: e.manifests}, streams); err != nil || out.String() != tc.want {
			t.Errorf("delete %v = %q, %v; want %q", tc.names, out.String(), err, tc.want)
		}
	}
	if left := dirState(t, e.manifests); len(left) != 0 {
		t.Errorf("manifest dir after deleting everything: %v", left)
	}
}
