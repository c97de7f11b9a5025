//go:build integration

package integration

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// identityManifest is a two-container pod with a downwardAPI volume of
// its labels and annotations and an env var from a label; labels is the
// YAML of metadata.labels.
func identityManifest(labels string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: idp
  labels: %s
  annotations: {note: first}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: meta
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: "metadata.annotations['note']"}}
  containers:
  - name: main
    image: %[2]s
    command: ["sleep", "3600"]
    env: [{name: TIER, valueFrom: {fieldRef: {fieldPath: "metadata.labels['tier']"}}}]
    volumeMounts: [{name: meta, mountPath: /etc/meta}]
  - name: side
    image: %[2]s
    command: ["sleep", "3600"]
`, labels, env.ImageRef)
}

// podRun is what must not change when a pod is edited in place.
type podRun struct {
	uid        string
	containers map[string]string // container ID -> name
	pids       map[string]int    // name -> task PID
	restarts   int32
}

func observeRun(t *testing.T, p *corev1.Pod) podRun {
	t.Helper()
	r := podRun{uid: string(p.UID), containers: podContainers(t, string(p.UID)), pids: map[string]int{}}
	for _, cs := range p.Status.ContainerStatuses {
		r.pids[cs.Name] = containerPID(t, p, cs.Name)
		r.restarts += cs.RestartCount
	}
	return r
}

func (r podRun) same(o podRun) bool {
	return r.uid == o.uid && maps.Equal(r.containers, o.containers) && maps.Equal(r.pids, o.pids) && r.restarts == o.restarts
}

// TestLabelEditInPlace: adding a label and changing an annotation in the
// manifest keeps the pod (UID, container IDs, PIDs, no restart); get shows
// the new metadata, the downwardAPI files show it, env vars keep the value
// the container started with (kubelet semantics).
func TestLabelEditInPlace(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("idp.yaml", identityManifest("{app: idp, tier: a}"))
	before := observeRun(t, d.waitRunning("idp"))
	if before.restarts != 0 || len(before.containers) != 2 {
		t.Fatalf("start: %+v", before)
	}

	edited := strings.Replace(identityManifest("{app: idp, tier: b, added: yes-it-is}"), "note: first", "note: second", 1)
	d.writeManifest("idp.yaml", edited)
	if err := waitFor(10*time.Second, func() (bool, error) {
		out, _, _ := d.execCLI("", "idp", "-c", "main", "--", "sh", "-c", "cat /etc/meta/labels; echo; cat /etc/meta/annotations")
		return out == "added=\"yes-it-is\"\napp=\"idp\"\ntier=\"b\"\nsecond", nil
	}); err != nil {
		out, _, _ := d.execCLI("", "idp", "-c", "main", "--", "sh", "-c", "cat /etc/meta/labels; echo; cat /etc/meta/annotations")
		t.Fatalf("downwardAPI files not updated: %q\n%s", out, d.logs())
	}
	got := d.getPodJSON("idp")
	if got.Labels["added"] != "yes-it-is" || got.Labels["tier"] != "b" || got.Annotations["note"] != "second" {
		t.Errorf("get -o json: labels %v, annotations %v", got.Labels, got.Annotations)
	}
	if h, _ := manifest.SpecHash([]byte(edited)); got.Annotations[wellknown.AnnotationConfigHash] != h {
		t.Errorf("config hash %q, want the edited document's %q", got.Annotations[wellknown.AnnotationConfigHash], h)
	}
	if after := observeRun(t, d.waitRunning("idp")); !after.same(before) {
		t.Errorf("label edit changed the running pod:\nbefore %+v\nafter  %+v", before, after)
	}
	if out, _, _ := d.execCLI("", "idp", "-c", "main", "--", "sh", "-c", "echo $TIER"); out != "a\n" {
		t.Errorf("env TIER = %q in the running container, want the start value a", out)
	}

	// Any other edit is still a new pod.
	d.writeManifest("idp.yaml", strings.Replace(edited, `command: ["sleep", "3600"]`+"\n    env", `command: ["sleep", "3601"]`+"\n    env", 1))
	p := d.waitPod("idp", 60*time.Second, "new UID running", func(p *corev1.Pod) bool { return string(p.UID) != before.uid && allRunning(p) })
	if p.Labels["added"] != "yes-it-is" {
		t.Errorf("new pod labels %v", p.Labels)
	}
}

// TestUpgradeAdoptsLegacyUID: a pod running under the UID the previous
// podhost derived from its full spec hash (containers labelled as that
// version labelled them: pod-uid = legacy UID, spec-hash = full hash, no
// identity hash) is adopted by this version with no restart, and keeps that
// UID through a label edit and another restart.
func TestUpgradeAdoptsLegacyUID(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	doc := identityManifest("{app: idp, tier: a}")
	hash, err := manifest.SpecHash([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	legacy := string(manifest.PodUID("default", "idp", hash))
	// The previous version: run the pod under its legacy UID (an explicit
	// metadata.uid gives it that UID and its allocation checkpoint).
	d.writeManifest("idp.yaml", strings.Replace(doc, "  name: idp\n", "  name: idp\n  uid: "+legacy+"\n", 1))
	before := observeRun(t, d.waitRunning("idp"))
	if before.uid != legacy {
		t.Fatalf("UID %s, want %s", before.uid, legacy)
	}
	d.kill(syscall.SIGKILL) // pods keep running
	relabelLegacy(t, legacy, hash)

	d.writeManifest("idp.yaml", doc) // the manifest as the user wrote it: no uid
	d.start()
	p := d.waitRunning("idp")
	if string(p.UID) != legacy {
		t.Fatalf("after the upgrade the pod is %s, want the legacy UID %s kept\n%s", p.UID, legacy, d.logs())
	}
	if after := observeRun(t, p); !after.same(before) {
		t.Fatalf("upgrade changed the running pod:\nbefore %+v\nafter  %+v", before, after)
	}

	d.writeManifest("idp.yaml", identityManifest("{app: idp, tier: a, added: x1}"))
	if err := waitFor(10*time.Second, func() (bool, error) {
		out, _, _ := d.execCLI("", "idp", "-c", "main", "--", "cat", "/etc/meta/labels")
		return strings.Contains(out, `added="x1"`), nil
	}); err != nil {
		t.Fatalf("labels file not updated after a label edit of the adopted pod\n%s", d.logs())
	}
	if after := observeRun(t, d.waitRunning("idp")); !after.same(before) {
		t.Fatalf("label edit of the adopted pod changed it:\nbefore %+v\nafter  %+v", before, after)
	}

	d.kill(syscall.SIGKILL)
	d.start() // the pinned UID survives a restart (the edited document's legacy UID differs)
	if after := observeRun(t, d.waitRunning("idp")); !after.same(before) {
		t.Fatalf("restart after the edit changed the adopted pod:\nbefore %+v\nafter  %+v\n%s", before, after, d.logs())
	}
}

// relabelLegacy makes the pod's containers look like the previous version
// created them: spec-hash is the full hash of the uid-less document, no
// identity-hash label.
func relabelLegacy(t *testing.T, uid, hash string) {
	t.Helper()
	ctx := env.Context(context.Background())
	for id := range podContainers(t, uid) {
		c, err := env.Client().LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SetLabels(ctx, map[string]string{wellknown.LabelSpecHash: hash, wellknown.LabelIdentityHash: ""}); err != nil {
			t.Fatal(err)
		}
		l, err := c.Labels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l[wellknown.LabelSpecHash] != hash || l[wellknown.LabelIdentityHash] != "" {
			t.Fatalf("relabel %s: %v", id, l)
		}
	}
}
