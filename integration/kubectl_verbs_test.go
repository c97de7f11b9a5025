//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubectlVerbs: the kubectl verbs podhost's CLI leaves to kubectl
// (decisions 25) work against the daemon's kube API, checked in the
// manifest dir where they write: explain, get -o go-template, diff,
// replace, run, create secret --from-literal; debug is refused with a
// clear line (podhost has no ephemeral containers).
func TestKubectlVerbs(t *testing.T) {
	d := newPodhostd(t)
	d.enableKubeAPI()
	d.start()
	d.useKubectl()
	d.writeManifest("web.yaml", webPod("web", ""))
	d.mustKubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=120s")

	if out := d.mustKubectl("explain", "pod.spec.hostUsers"); !strings.Contains(out, "hostUsers") {
		t.Errorf("explain pod.spec.hostUsers: %q", out)
	}
	if out := d.mustKubectl("get", "pod", "web", "-o", "go-template={{.metadata.name}} {{.status.phase}}"); out != "web Running" {
		t.Errorf("get -o go-template: %q", out)
	}

	// diff against the daemon (a server-side dry run): the label it would
	// add, exit 1 as kubectl diff does for a difference, nothing written.
	edited := filepath.Join(d.dir, "web-edited.yaml")
	labelled := strings.Replace(webPod("web", ""), "metadata:\n  name: web\n", "metadata:\n  name: web\n  labels: {tier: front}\n", 1)
	if err := os.WriteFile(edited, []byte(labelled), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(d.manifestDir, "web.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := d.kubectl("", "diff", "-f", edited); code != 1 || !strings.Contains(out, "+    tier: front") {
		t.Errorf("diff: exit %d, want 1 with the label:\n%s%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(filepath.Join(d.manifestDir, "web.yaml")); string(after) != string(before) {
		t.Errorf("diff wrote the manifest:\n%s", after)
	}
	if out := d.mustKubectl("replace", "-f", edited); !strings.Contains(out, "pod/web replaced") {
		t.Errorf("replace: %q", out)
	}
	if after, _ := os.ReadFile(filepath.Join(d.manifestDir, "web.yaml")); !strings.Contains(string(after), "tier: front") {
		t.Errorf("replace did not write the label:\n%s", after)
	}

	if out := d.mustKubectl("run", "runner", "--image="+env.ImageRef, "--restart=Never", "--", "sleep", "3600"); !strings.Contains(out, "pod/runner created") {
		t.Errorf("run: %q", out)
	}
	d.mustKubectl("wait", "--for=condition=Ready", "pod/runner", "--timeout=120s")
	if files, _ := filepath.Glob(filepath.Join(d.manifestDir, "*runner*")); len(files) != 1 {
		t.Errorf("run: manifest files %v, want one", files)
	}

	if out := d.mustKubectl("create", "secret", "generic", "lit", "--from-literal=k=v"); !strings.Contains(out, "secret/lit created") {
		t.Errorf("create secret: %q", out)
	}
	files, _ := filepath.Glob(filepath.Join(d.manifestDir, "*lit*"))
	if len(files) != 1 {
		t.Fatalf("create secret: manifest files %v, want one", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the Secret's file %s: %v %v, want 0600", files[0], fi.Mode(), err)
	}

	if out, errOut, code := d.kubectl("", "debug", "web", "--image="+env.ImageRef, "--", "true"); code == 0 || !strings.Contains(out+errOut, "ephemeral") {
		t.Errorf("debug: exit %d, want a refusal naming ephemeral containers:\n%s%s", code, out, errOut)
	}
}
