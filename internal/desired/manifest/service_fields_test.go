package manifest

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// serviceAuditTypes are the types of docs/fields.md's Services section.
var serviceAuditTypes = []reflect.Type{
	reflect.TypeFor[corev1.ServiceSpec](),
	reflect.TypeFor[corev1.ServicePort](),
	reflect.TypeFor[corev1.ServiceAccount](),
}

// serviceAuditRow is a row "| `Type.field` | treatment | `example` | note |".
type serviceAuditRow struct {
	auditRow
	example map[string]any
}

func readServiceAudit(t *testing.T) map[string]serviceAuditRow {
	t.Helper()
	f, err := os.Open(fieldsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]serviceAuditRow{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		r := serviceAuditRow{auditRow: auditRow{key: strings.Trim(strings.TrimSpace(cells[1]), "`"), treatment: strings.TrimSpace(cells[2]),
			note: strings.TrimSpace(cells[4])}}
		if err := json.Unmarshal([]byte(strings.Trim(strings.TrimSpace(cells[3]), "`")), &r.example); err != nil {
			t.Errorf("%s: %s: example: %v", fieldsDoc, r.key, err)
		}
		if _, dup := out[r.key]; dup {
			t.Errorf("%s: %s listed twice", fieldsDoc, r.key)
		}
		out[r.key] = r
	}
	return out
}

// TestServiceFieldAudit: every field of the Service types has a row, and
// each row's example is refused naming the field exactly when the row says
// refused.
func TestServiceFieldAudit(t *testing.T) {
	rows := readServiceAudit(t)
	table := map[string]auditRow{}
	for k, r := range rows {
		table[k] = r.auditRow
	}
	missing, stale := missingRows(serviceAuditTypes, table)
	for _, k := range missing {
		if typ, f, _ := strings.Cut(k, "."); typ == "ServiceAccount" && (f == "apiVersion" || f == "kind" || f == "metadata") {
			continue // the object's own, as a ConfigMap's
		}
		t.Errorf("%s: no row for %s", fieldsDoc, k)
	}
	for _, k := range stale {
		t.Errorf("%s: row %s names no field of k8s.io/api", fieldsDoc, k)
	}
	for key, r := range rows {
		t.Run(key, func(t *testing.T) {
			typ, fieldName, _ := strings.Cut(key, ".")
			doc, path := serviceExample(typ, r.example)
			b, _ := json.Marshal(doc)
			_, err := DecodeObjects("svc.yaml", b)
			switch {
			case r.treatment == refused:
				if err == nil || !strings.Contains(err.Error(), path+fieldName) || !strings.Contains(err.Error(), "not supported by podhost") {
					t.Errorf("refused field %s: got %v", key, err)
				}
			case err != nil:
				t.Errorf("%s field %s refused: %v", r.treatment, key, err)
			}
		})
	}
}

// serviceExample is a document with example merged where typ lives, and
// the field path prefix of typ's fields.
func serviceExample(typ string, example map[string]any) (map[string]any, string) {
	port := map[string]any{"name": "http", "port": 80}
	spec := map[string]any{"selector": map[string]any{"app": "web"}, "ports": []any{port}}
	switch typ {
	case "ServiceAccount":
		doc := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "web"}}
		maps.Copy(doc, example)
		return doc, ""
	case "ServicePort":
		maps.Copy(port, example)
		if _, named := example["targetPort"].(string); named {
			port["name"] = "web"
		}
		return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web"}, "spec": spec}, "spec.ports[0]."
	}
	maps.Copy(spec, example)
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "web"}, "spec": spec}, "spec."
}
