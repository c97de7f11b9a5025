package manifest

import (
	"regexp"
	"strings"
	"testing"
)

func replace1(s, old, new string) string { return strings.Replace(s, old, new, 1) }

const hashBase = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: web
    image: nginx:1.27
    ports:
    - containerPort: 80
`

func TestSpecHashEquivalentForms(t *testing.T) {
	want, err := SpecHash([]byte(hashBase))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(want) {
		t.Fatalf("hash %q is not 16 hex characters", want)
	}
	same := map[string]string{
		"key order": `kind: Pod
spec:
  containers:
  - ports:
    - containerPort: 80
    image: nginx:1.27
    name: web
metadata:
  labels: {app: web}
  name: web
apiVersion: v1
`,
		"whitespace, comments and quoting": "# comment\n---\napiVersion: 'v1'\nkind:   \"Pod\"\nmetadata:\n    name: web   # trailing\n    labels:\n      app: web\nspec:\n    containers:\n      - name: web\n        image: \"nginx:1.27\"\n        ports: [{containerPort: 80}]\n",
		"JSON": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},
		  "spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}`,
		"JSON number forms": `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},
		  "spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80.0}]}]}}`,
		"YAML float": replace1(hashBase, "containerPort: 80", "containerPort: 80.0"),
		"anchors":    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: &n web\n  labels: {app: *n}\nspec:\n  containers:\n  - name: *n\n    image: nginx:1.27\n    ports:\n    - containerPort: 80\n",
		"CRLF":       strings.ReplaceAll(hashBase, "\n", "\r\n"),
	}
	for name, doc := range same {
		got, err := SpecHash([]byte(doc))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got != want {
			t.Errorf("%s: hash %s, want %s", name, got, want)
		}
	}
}

func TestSpecHashDiffers(t *testing.T) {
	base, _ := SpecHash([]byte(hashBase))
	different := map[string]string{
		"image":            replace1(hashBase, "nginx:1.27", "nginx:1.28"),
		"added default":    hashBase + "  restartPolicy: Always\n", // explicit defaults are part of what the user wrote
		"label value":      replace1(hashBase, "{app: web}", "{app: web2}"),
		"string vs number": replace1(hashBase, "{app: web}", "{app: web, v: \"1\"}"),
		"number":           replace1(hashBase, "{app: web}", "{app: web, v: 1}"),
	}
	seen := map[string]string{base: "base"}
	for name, doc := range different {
		got, err := SpecHash([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%s hashes like %s: %s", name, prev, got)
		}
		seen[got] = name
	}
}

func TestSpecHashErrors(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "a: 1\n---\nb: 2\n", "a: [\n", "a: 1\na: 2\n", "\xff"} {
		if h, err := SpecHash([]byte(doc)); err == nil {
			t.Errorf("SpecHash(%q) = %s, want an error", doc, h)
		}
	}
}

// TestSpecHashStable pins the canonical form: if this changes, every pod
// podhost runs gets a new UID and restarts after an upgrade.
func TestSpecHashStable(t *testing.T) {
	got, err := SpecHash([]byte(hashBase))
	if err != nil {
		t.Fatal(err)
	}
	if want := "b824da7d7ddfbc1b"; got != want {
		t.Errorf("SpecHash changed: %s, want %s", got, want)
	}
	if got, want := PodUID("default", "web", "b824da7d7ddfbc1b"), "5116ecc4-7cb1-8da7-ac51-5d2f91049059"; string(got) != want {
		t.Errorf("PodUID changed: %s, want %s", got, want)
	}
}

func TestPodUID(t *testing.T) {
	uid := string(PodUID("default", "web", "0123456789abcdef"))
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(uid) {
		t.Errorf("PodUID = %s, not a version-8 UUID", uid)
	}
	if uid != string(PodUID("default", "web", "0123456789abcdef")) {
		t.Error("PodUID is not deterministic")
	}
	for _, other := range [][3]string{
		{"prod", "web", "0123456789abcdef"},
		{"default", "web2", "0123456789abcdef"},
		{"default", "web", "0123456789abcdee"},
	} {
		if string(PodUID(other[0], other[1], other[2])) == uid {
			t.Errorf("PodUID%v collides", other)
		}
	}
}
