package manifest

import (
	"slices"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/model/wellknown"
)

const identityBase = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
  annotations: {team: a}
spec:
  initContainers:
  - name: init
    image: busybox:1.36
    resources: {requests: {cpu: 50m}}
  containers:
  - name: web
    image: nginx:1.27
    resources: {requests: {cpu: 100m}, limits: {memory: 64Mi}}
    env: [{name: A, value: "1"}]
  - name: side
    image: busybox:1.36
`

// TestIdentityHash: which edits keep a pod's UID (an identity hash equal to
// the base document's) and which make it a new pod.
func TestIdentityHash(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		same bool // same identity (and UID) as identityBase
	}{
		{"unchanged", identityBase, true},
		{"key order and formatting", `{"kind":"Pod","apiVersion":"v1","spec":{"containers":[
			{"image":"nginx:1.27","name":"web","env":[{"value":"1","name":"A"}],"resources":{"limits":{"memory":"64Mi"},"requests":{"cpu":"100m"}}},
			{"name":"side","image":"busybox:1.36"}],
			"initContainers":[{"name":"init","image":"busybox:1.36","resources":{"requests":{"cpu":"50m"}}}]},
			"metadata":{"annotations":{"team":"a"},"labels":{"app":"web"},"name":"web"}}`, true},
		{"label added", replace1(identityBase, "{app: web}", "{app: web, tier: front}"), true},
		{"label changed", replace1(identityBase, "{app: web}", "{app: web2}"), true},
		{"labels removed", replace1(identityBase, "  labels: {app: web}\n", ""), true},
		{"annotation changed", replace1(identityBase, "{team: a}", "{team: b, note: x}"), true},
		{"podhost.io/after annotation", replace1(identityBase, "{team: a}", "{team: a, podhost.io/after: db}"), true},
		{"annotations removed", replace1(identityBase, "  annotations: {team: a}\n", ""), true},
		{"apparmor annotation added", replace1(identityBase, "{team: a}", "{team: a, container.apparmor.security.beta.kubernetes.io/web: unconfined}"), false},
		{"container resources", replace1(identityBase, "cpu: 100m", "cpu: 200m"), true},
		{"container resources added", replace1(identityBase, "- name: side\n    image: busybox:1.36\n", "- name: side\n    image: busybox:1.36\n    resources: {limits: {cpu: 1}}\n"), true},
		{"init container resources", replace1(identityBase, "cpu: 50m", "cpu: 60m"), true},
		{"status pasted", identityBase + "status: {phase: Running}\n", true},
		{"image", replace1(identityBase, "nginx:1.27", "nginx:1.28"), false},
		{"env", replace1(identityBase, `value: "1"`, `value: "2"`), false},
		{"name", replace1(identityBase, "name: web\n  labels", "name: web2\n  labels"), false},
		{"container name", replace1(identityBase, "- name: side", "- name: side2"), false},
		{"container added", identityBase + "  - name: third\n    image: busybox:1.36\n", false},
		{"restartPolicy", identityBase + "  restartPolicy: Always\n", false},
		{"uid", replace1(identityBase, "  name: web\n", "  name: web\n  uid: 6f1c9a7e-0d4b-4f5e-9a39-1c2d3e4f5a6b\n"), false},
		{"hostname", identityBase + "  hostname: other\n", false},
	}
	base, err := IdentityHash([]byte(identityBase))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := IdentityHash([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if (got == base) != tt.same {
				t.Errorf("identity %s, base %s: same = %v, want %v", got, base, got == base, tt.same)
			}
			pods, err := Decode("web.yaml", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if Identity(pods[0]) != got {
				t.Errorf("identity annotation %q, want %q", Identity(pods[0]), got)
			}
			if !strings.Contains(tt.doc, "uid:") && pods[0].UID != PodUID("default", pods[0].Name, got) {
				t.Errorf("UID %s is not derived from the identity hash", pods[0].UID)
			}
		})
	}
}

// TestIdentityAppArmorAnnotation: the AppArmor annotation is read only
// when a container is created, so editing it is a new pod; other
// annotations beside it stay mutable.
func TestIdentityAppArmorAnnotation(t *testing.T) {
	withAA := func(team, profile string) string {
		return replace1(identityBase, "{team: a}", "{team: "+team+", container.apparmor.security.beta.kubernetes.io/web: "+profile+"}")
	}
	id := func(doc string) string {
		t.Helper()
		h, err := IdentityHash([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := id(withAA("a", "localhost/p1"))
	if id(withAA("b", "localhost/p1")) != base {
		t.Error("an edit of another annotation beside the AppArmor one made a new pod")
	}
	if id(withAA("a", "localhost/p2")) == base {
		t.Error("an edit of the AppArmor annotation kept the pod")
	}
}

// TestIdentityWithoutMutableFields: a document that sets none of the
// mutable paths has identity hash == spec hash, so its UID is the one older
// versions derived (LegacyUID): nothing to adopt on upgrade.
func TestIdentityWithoutMutableFields(t *testing.T) {
	doc := "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: [{name: a, image: busybox:1.36}]\n"
	pod := mustDecodeString(t, "a.yaml", doc)[0]
	if Identity(pod) != Hash(pod) || pod.UID != LegacyUID(pod) {
		t.Errorf("identity %s, hash %s, UID %s, legacy UID %s", Identity(pod), Hash(pod), pod.UID, LegacyUID(pod))
	}
	withLabel := mustDecodeString(t, "a.yaml", strings.Replace(doc, "{name: a}", "{name: a, labels: {k: v}}", 1))[0]
	if withLabel.UID != pod.UID || withLabel.UID == LegacyUID(withLabel) || Hash(withLabel) == Hash(pod) {
		t.Errorf("labelled: UID %s (want %s), legacy %s, hash %s", withLabel.UID, pod.UID, LegacyUID(withLabel), Hash(withLabel))
	}
	if withLabel.Annotations[wellknown.AnnotationIdentityHash] != Identity(pod) {
		t.Errorf("identity annotation %q", withLabel.Annotations[wellknown.AnnotationIdentityHash])
	}
}

// TestWithoutDoesNotModify: stripping copies along the path.
func TestWithoutDoesNotModify(t *testing.T) {
	v := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a", "resources": map[string]any{}}}}}
	out := without(v, splitPath("spec.containers[*].resources"))
	c := v["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if _, ok := c["resources"]; !ok {
		t.Error("without modified its input")
	}
	oc := out.(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	if _, ok := oc["resources"]; ok || oc["name"] != "a" {
		t.Errorf("without = %v", out)
	}
	if got := splitPath("spec.containers[*].resources"); !slices.Equal(got, []string{"spec", "containers", "*", "resources"}) {
		t.Errorf("splitPath = %q", got)
	}
}

// TestIdentityHashStable pins the identity of a document with mutable
// fields: if this changes, such pods get new UIDs on upgrade.
func TestIdentityHashStable(t *testing.T) {
	got, err := IdentityHash([]byte(hashBase))
	if err != nil {
		t.Fatal(err)
	}
	if want := "69a2b6b6cf8fcd1c"; got != want {
		t.Errorf("IdentityHash changed: %s, want %s", got, want)
	}
}

// TestIdentityIgnoresResources: a resources edit keeps the pod whatever it
// does to the QoS class; the resize path (internal/kubelet/manager) refuses a class
// change, as Kubernetes does.
func TestIdentityIgnoresResources(t *testing.T) {
	doc := func(resources string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers:\n  - name: a\n    image: busybox:1.36\n" + resources
	}
	tests := []struct{ name, from, to string }{
		{"burstable to burstable", "    resources: {requests: {cpu: 100m}}\n", "    resources: {requests: {cpu: 200m}, limits: {memory: 1Gi}}\n"},
		{"guaranteed to guaranteed", "    resources: {limits: {cpu: 1, memory: 1Gi}}\n", "    resources: {limits: {cpu: 2, memory: 2Gi}}\n"},
		{"best effort to burstable", "", "    resources: {requests: {cpu: 100m}}\n"},
		{"burstable to guaranteed", "    resources: {requests: {cpu: 100m}}\n", "    resources: {limits: {cpu: 1, memory: 1Gi}}\n"},
		{"guaranteed to best effort", "    resources: {limits: {cpu: 1, memory: 1Gi}}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, errA := IdentityHash([]byte(doc(tt.from)))
			b, errB := IdentityHash([]byte(doc(tt.to)))
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if a != b {
				t.Errorf("identities %s, %s differ", a, b)
			}
		})
	}
}
