package manifest

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestIgnoredKindsDocumented: docs/fields.md's "Kinds without effect"
// table names exactly the kinds decodeIgnored takes, with their apiVersion.
func TestIgnoredKindsDocumented(t *testing.T) {
	f, err := os.Open(fieldsDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	documented := map[string]string{}
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Kinds without effect"
			continue
		}
		cells := strings.Split(line, "|")
		if !in || len(cells) != 4 {
			continue
		}
		kind, version, ok := strings.Cut(strings.TrimSpace(cells[1]), " (`") // "Role (`rbac.authorization.k8s.io/v1`)"
		if !ok {
			continue
		}
		documented[kind] = strings.TrimSuffix(version, "`)")
	}
	for kind, k := range ignoredKinds {
		if v, ok := documented[kind]; !ok || v != k.apiVersion {
			t.Errorf("%s: kind %s (%s) has no row, or another apiVersion (%q)", fieldsDoc, kind, k.apiVersion, v)
		}
	}
	for kind := range documented {
		if !IsIgnoredKind(kind) {
			t.Errorf("%s: kind %s is documented as without effect but is not taken", fieldsDoc, kind)
		}
	}
}
