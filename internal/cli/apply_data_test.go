package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
		_, err := Apply(context.Background(), opts, IOStreams{Out: &out, ErrOut: &out})
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
