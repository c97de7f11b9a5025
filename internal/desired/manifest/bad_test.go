package manifest

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// badManifests maps each file in testdata/bad to its exact error.
var badManifests = map[string]string{
	"bad-quantity.yaml":          `bad-quantity.yaml: spec.containers[0].resources.limits[memory]: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
	"duplicate-container.yaml":   `duplicate-container.yaml: spec.containers[1].name: Duplicate value: "setup"`,
	"duplicate-field.yaml":       `duplicate-field.yaml: spec.containers[0].image: duplicate field`,
	"invalid-utf8.yaml":          `invalid-utf8.yaml: invalid UTF-8 at line 4, column 12 (byte offset 46): manifests must be UTF-8 text`,
	"configmap-key-slash.yaml":   `configmap-key-slash.yaml: data[conf/key]: Invalid value: "conf/key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
	"kind-deployment.yaml":       `kind-deployment.yaml: kind: Unsupported value: "Deployment": not supported by podhost (only Pod, ConfigMap, Secret, Service, ServiceAccount)`,
	"secret-bad-base64.yaml":     `secret-bad-base64.yaml: [doc 1] data[password]: Invalid value: not valid base64 (value not shown; use stringData for plain text)`,
	"limits-below-requests.yaml": `limits-below-requests.yaml: spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1`,
	"missing-image.yaml":         `missing-image.yaml: spec.containers[0].image: Required value`,
	"multi-doc.yaml":             `multi-doc.yaml: [doc 2] spec.containers[0].image: Required value`,
	"name-dotdot.yaml":           `name-dotdot.yaml: metadata.name: Invalid value: "..": ` + dnsSubdomainMsg,
	"name-slash.yaml":            `name-slash.yaml: metadata.name: Invalid value: "web/evil": ` + dnsSubdomainMsg,
	"syntax.yaml":                `syntax.yaml: yaml: line 8: mapping values are not allowed in this context`,
	"unknown-field.yaml":         `unknown-field.yaml: spec.containers[0].imagePullPolicyy: unknown field (did you mean "imagePullPolicy"?)`,
	"unsupported-volume.yaml":    `unsupported-volume.yaml: spec.volumes[2].nfs: Unsupported value: "nfs": not supported by podhost (supported: configMap, downwardAPI, emptyDir, hostPath, projected, secret)`,
	"wrong-type.yaml":            `wrong-type.yaml: spec.containers[0].ports[0].containerPort: Invalid value: "http": expected integer, got string`,
	"yaml-bomb.yaml":             `yaml-bomb.yaml: yaml: document contains excessive aliasing`,
}

func TestBadManifests(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(badManifests) {
		t.Errorf("testdata/bad has %d files, the table %d", len(files), len(badManifests))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, ok := badManifests[filepath.Base(f)]
			if !ok {
				t.Fatalf("no expected error for %s", f)
			}
			pods, err := ReadFile(f)
			if pods != nil {
				t.Errorf("got pods %v, want nil", pods)
			}
			if got := errString(err); got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			assertOneLinePerError(t, err)
		})
	}
}

func TestGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 10<<20)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	small := big[:4096]
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"10 MB of garbage", big, "g.bin: file is 10485760 bytes, more than the 1048576-byte limit for a manifest"},
		{"one byte over the limit", bytes.Repeat([]byte("#"), MaxFileSize+1), "g.bin: file is 1048577 bytes, more than the 1048576-byte limit for a manifest"},
		{"binary", small, "g.bin: binary data (control character 0x"},
		{"NUL in text", []byte("apiVersion: v1\nkind: Pod\x00\n"), "g.bin: binary data (control character 0x00 at line 2, column 10): not a YAML or JSON manifest"},
		{"invalid UTF-8", []byte("a: \xff\n"), "g.bin: invalid UTF-8 at line 1, column 4 (byte offset 3): manifests must be UTF-8 text"},
		{"overlong UTF-8", []byte("a: \xc0\xaf\n"), "g.bin: invalid UTF-8 at line 1, column 4"},
		{"surrogate", []byte("a: \xed\xa0\x80\n"), "g.bin: invalid UTF-8 at line 1, column 4"},
		{"plain text", []byte("hello world\n"), "g.bin: document is a string, not a Pod object (a YAML mapping or JSON object)"},
		{"a list", []byte("- a\n- b\n"), "g.bin: document is a list, not a Pod object (a YAML mapping or JSON object)"},
		{"JSON list", []byte(`[{"kind":"Pod"}]`), "g.bin: document is a list, not a Pod object (a YAML mapping or JSON object)"},
		{"null", []byte("null\n"), "g.bin: kind: Required value: this must be a Pod, ConfigMap or Secret (apiVersion: v1)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			pods, err := Decode("/tmp/g.bin", tc.data)
			if pods != nil || err == nil {
				t.Fatalf("Decode = %v, %v; want an error", pods, err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %v\nwant prefix %s", err, tc.want)
			}
			assertOneLinePerError(t, err)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestYAMLBombsAreCheap checks that alias bombs fail fast and bounded: the
// classic billion-laughs doc is refused by go-yaml's alias ratio check
// right away; a doc crafted to stay just under that ratio is stopped by
// maxValues. Both are bounded documents, no sleeps: the time limits are
// sanity bounds two orders of magnitude above what they take.
func TestYAMLBombsAreCheap(t *testing.T) {
	laughs := billionLaughs(9)
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  annotations:\n    a: &a [")
	b.WriteString(strings.Repeat("1,", 4000))
	b.WriteString("1]\n")
	for i := range 96 {
		b.WriteString("    b" + strings.Repeat("x", i) + ": *a\n")
	}
	cases := []struct {
		name  string
		doc   []byte
		want  string
		limit time.Duration
	}{
		{"billion laughs", laughs, "bomb.yaml: yaml: document contains excessive aliasing", time.Second},
		{"just under the alias ratio", []byte(b.String()),
			"bomb.yaml: document too large: more than 200000 values (after expanding YAML aliases, if any)", 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Decode("bomb.yaml", tc.doc)
			elapsed := time.Since(start)
			if got := errString(err); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if elapsed > tc.limit {
				t.Errorf("took %v, want < %v", elapsed, tc.limit)
			}
			t.Logf("%d-byte document refused in %v", len(tc.doc), elapsed)
		})
	}
}

// billionLaughs returns a pod whose annotation expands to 10^levels strings.
func billionLaughs(levels int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bomb\nx0: &x0 lol\n")
	for i := 1; i <= levels; i++ {
		prev := "*x" + string(rune('0'+i-1))
		b.WriteString("x" + string(rune('0'+i)) + ": &x" + string(rune('0'+i)) + " [")
		b.WriteString(strings.TrimSuffix(strings.Repeat(prev+",", 10), ","))
		b.WriteString("]\n")
	}
	return []byte(b.String())
}

func TestReadFileRefusesBeforeReading(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse 1 GiB. The size in the error comes from Stat: had the file
	// been read (at most MaxFileSize+1 bytes), Decode would report 1048577.
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = ReadFile(big)
	if want := "big.yaml: file is 1073741824 bytes, more than the 1048576-byte limit for a manifest"; errString(err) != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if _, err := ReadFile(dir); !strings.Contains(errString(err), ": not a regular file (mode d") {
		t.Errorf("directory: got %v", err)
	}
}
