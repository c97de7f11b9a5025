package manifest

import (
	"strings"
	"testing"
)

// get's output loses what podhost adds (status, server metadata, every
// podhost annotation, the node name) and keeps the rest, uid included.
func TestCleanExported(t *testing.T) {
	in := `apiVersion: v1
kind: Pod
metadata:
  name: web
  uid: 1234
  creationTimestamp: null
  labels: {app: web}
  annotations:
    mine: kept
    podhost.io/config-hash: abc
    podhost.io/identity-hash: abc
    podhost.io/config-source: /etc/podhost/manifests/web.yaml
    podhost.io/warnings: file turned invalid
    podhost.io/rolled-back-from: def
    podhost.io/rolled-back-reason: not Ready
spec:
  nodeName: box
  containers: [{name: c, image: busybox}]
status: {phase: Running}
`
	out := string(CleanExported([]byte(in)))
	for _, gone := range []string{"podhost.io/", "status", "nodeName", "creationTimestamp"} {
		if strings.Contains(out, gone) {
			t.Errorf("%q kept:\n%s", gone, out)
		}
	}
	for _, kept := range []string{"uid:", "mine: kept", "app: web", "image: busybox"} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q lost:\n%s", kept, out)
		}
	}
	plain := "apiVersion: v1\nkind: Pod # as written\nmetadata: {name: web}\nspec: {containers: [{name: c, image: busybox}]}\n"
	if got := string(CleanExported([]byte(plain))); got != plain {
		t.Errorf("a manifest with nothing to drop was rewritten:\n%s", got)
	}
}
