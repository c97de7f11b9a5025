package manifest

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The field audit: docs/fields.md lists every field a manifest can carry,
// walked here by reflection over the k8s.io/api version in go.mod, with its
// treatment. An upgrade of k8s.io/api that adds a field fails
// TestFieldAuditCoversEveryField until the field has a row.

const fieldsDoc = "../../../docs/fields.md"

// Treatments of a field.
const (
	honoured = "honoured" // podhost does what the kubelet does
	refused  = "refused"  // a manifest setting it is refused: "... not supported by podhost"
	ignored  = "ignored"  // cluster-only: accepted, no effect on one machine
)

// auditTypes are the types whose fields the table must cover, in the order
// of the table. Embedded inline structs (Volume's VolumeSource,
// ProbeHandler, ...) are flattened into their parent's rows.
var auditTypes = []reflect.Type{
	reflect.TypeFor[metav1.ObjectMeta](),
	reflect.TypeFor[corev1.PodSpec](),
	reflect.TypeFor[corev1.PodSecurityContext](),
	reflect.TypeFor[corev1.Container](),
	reflect.TypeFor[corev1.SecurityContext](),
	reflect.TypeFor[corev1.ContainerPort](),
	reflect.TypeFor[corev1.EnvVar](),
	reflect.TypeFor[corev1.EnvVarSource](),
	reflect.TypeFor[corev1.ResourceRequirements](),
	reflect.TypeFor[corev1.VolumeMount](),
	reflect.TypeFor[corev1.Probe](),
	reflect.TypeFor[corev1.ProbeHandler](),
	reflect.TypeFor[corev1.Lifecycle](),
	reflect.TypeFor[corev1.LifecycleHandler](),
	reflect.TypeFor[corev1.Volume](),
	reflect.TypeFor[corev1.HostPathVolumeSource](),
	reflect.TypeFor[corev1.EmptyDirVolumeSource](),
	reflect.TypeFor[corev1.ImageVolumeSource](),
	reflect.TypeFor[corev1.ConfigMapVolumeSource](),
	reflect.TypeFor[corev1.SecretVolumeSource](),
	reflect.TypeFor[corev1.KeyToPath](),
}

// auditField is one field found by the walk.
type auditField struct {
	key   string // "<Type>.<json name>", e.g. "PodSpec.readinessGates"
	index []int  // reflect index path from the type (through inline structs)
	typ   reflect.Type
}

// walkFields lists the JSON-visible fields of t (a struct), inline embedded
// structs flattened, in declaration order.
func walkFields(t reflect.Type) []auditField {
	var out []auditField
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			idx := append(slices.Clone(index), i)
			switch {
			case !f.IsExported() || name == "-":
			case f.Anonymous && (name == "" || strings.Contains(opts, "inline")) && f.Type.Kind() == reflect.Struct:
				walk(f.Type, idx)
			default:
				if name == "" {
					name = f.Name
				}
				out = append(out, auditField{key: t.Name() + "." + name, index: idx, typ: f.Type})
			}
		}
	}
	walk(t, nil)
	for i := range out { // rows are named after the audited type, not the inline struct
		out[i].key = t.Name() + out[i].key[strings.Index(out[i].key, "."):]
	}
	return out
}

// auditRow is one row of the table.
type auditRow struct {
	key, treatment, note string
}

// missingRows returns the fields of types that have no row in table, and
// the rows that name no field (stale after an upgrade).
func missingRows(types []reflect.Type, table map[string]auditRow) (missing, stale []string) {
	seen := map[string]bool{}
	for _, t := range types {
		for _, f := range walkFields(t) {
			seen[f.key] = true
			if _, ok := table[f.key]; !ok {
				missing = append(missing, f.key)
			}
		}
	}
	for k := range table {
		if !seen[k] {
			stale = append(stale, k)
		}
	}
	slices.Sort(stale)
	return missing, stale
}

// readAuditTable parses the rows "| `Type.field` | treatment | note |" of
// docs/fields.md.
func readAuditTable(t testing.TB) (map[string]auditRow, []auditRow) {
	t.Helper()
	f, err := os.Open(fieldsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	table := map[string]auditRow{}
	var rows []auditRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		r := auditRow{key: strings.Trim(strings.TrimSpace(cells[1]), "`"),
			treatment: strings.TrimSpace(cells[2]), note: strings.TrimSpace(cells[3])}
		if _, dup := table[r.key]; dup {
			t.Errorf("%s: %s listed twice", fieldsDoc, r.key)
		}
		switch r.treatment {
		case honoured, refused, ignored:
		default:
			t.Errorf("%s: %s: treatment %q, want honoured, refused or ignored", fieldsDoc, r.key, r.treatment)
		}
		table[r.key] = r
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return table, rows
}

func TestFieldAuditCoversEveryField(t *testing.T) {
	table, _ := readAuditTable(t)
	missing, stale := missingRows(append(slices.Clone(auditTypes), workloadAuditTypes...), table)
	for _, k := range missing {
		t.Errorf("%s: no row for %s: add it (honoured / refused / ignored)", fieldsDoc, k)
	}
	for _, k := range stale {
		t.Errorf("%s: row %s names no field of k8s.io/api: remove it", fieldsDoc, k)
	}
}

// The failure mode: a field added by an upgrade (here a synthetic struct)
// is reported until the table has a row for it; inline structs are walked.
func TestFieldAuditReportsNewField(t *testing.T) {
	type Inline struct {
		Deep string `json:"deep,omitempty"`
	}
	type Synthetic struct {
		Known    string `json:"known"`
		NewField *bool  `json:"newField,omitempty"`
		Inline   `json:",inline"`
		hidden   int //nolint:unused // unexported: not a manifest field
		Skipped  int `json:"-"`
	}
	typ := reflect.TypeFor[Synthetic]()
	table := map[string]auditRow{"Synthetic.known": {key: "Synthetic.known", treatment: honoured}, "Synthetic.gone": {}}
	missing, stale := missingRows([]reflect.Type{typ}, table)
	if want := []string{"Synthetic.newField", "Synthetic.deep"}; !reflect.DeepEqual(missing, want) {
		t.Errorf("missing = %q, want %q", missing, want)
	}
	if want := []string{"Synthetic.gone"}; !reflect.DeepEqual(stale, want) {
		t.Errorf("stale = %q, want %q", stale, want)
	}
	_ = Synthetic{}.hidden
}

const (
	readmePath  = "../../../README.md"
	readmeBegin = "<!-- BEGIN fields: generated from docs/fields.md; PODHOST_UPDATE_README=1 go test ./internal/desired/manifest -run TestReadmeFields rewrites it -->"
	readmeEnd   = "<!-- END fields -->"
)

// readmeFields renders the table as README's supported-fields list: per
// type, the honoured, refused and ignored fields.
func readmeFields(rows []auditRow) string {
	type group struct{ h, r, i []string }
	var order []string
	groups := map[string]*group{}
	for _, r := range rows {
		typ, name, _ := strings.Cut(r.key, ".")
		g := groups[typ]
		if g == nil {
			g = &group{}
			groups[typ] = g
			order = append(order, typ)
		}
		name = "`" + name + "`"
		switch r.treatment {
		case honoured:
			g.h = append(g.h, name)
		case refused:
			g.r = append(g.r, name)
		default:
			g.i = append(g.i, name)
		}
	}
	var b strings.Builder
	for _, typ := range order {
		g := groups[typ]
		var parts []string
		for _, part := range []struct {
			label  string
			fields []string
		}{{"honoured", g.h}, {"refused", g.r}, {"ignored (cluster-only)", g.i}} {
			if len(part.fields) > 0 {
				parts = append(parts, part.label+" "+strings.Join(part.fields, ", "))
			}
		}
		fmt.Fprintf(&b, "- **%s**: %s.\n", typ, strings.Join(parts, "; "))
	}
	return b.String()
}

// README's supported-fields section is generated from the table and must
// match it.
func TestReadmeFieldsMatchTable(t *testing.T) {
	_, rows := readAuditTable(t)
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	before, rest, ok1 := strings.Cut(readme, readmeBegin+"\n")
	got, after, ok2 := strings.Cut(rest, readmeEnd)
	if !ok1 || !ok2 {
		t.Fatalf("README.md lacks the generated fields block (%q ... %q)", readmeBegin, readmeEnd)
	}
	want := readmeFields(rows)
	if got == want {
		return
	}
	if os.Getenv("PODHOST_UPDATE_README") != "" {
		if err := os.WriteFile(readmePath, []byte(before+readmeBegin+"\n"+want+readmeEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's fields block does not match docs/fields.md; run PODHOST_UPDATE_README=1 go test ./internal/desired/manifest -run TestReadmeFields\ngot:\n%s\nwant:\n%s", got, want)
}
