package source

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// podYAML is a valid pod manifest; image varies the spec (and so the UID).
func podYAML(name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: main
    image: %s
`, name, image)
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// secureDir returns a temp dir with mode 0755 (t.TempDir is 0700 already,
// but be explicit: the source checks group/world write bits).
func secureDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// summary renders a snapshot compactly: "ns/name=image ..." then errors.
func summary(s Snapshot) string {
	var parts []string
	for _, p := range s.Pods {
		parts = append(parts, manifest.FullName(p)+"="+p.Spec.Containers[0].Image)
	}
	slices.Sort(parts)
	for _, fe := range s.Errors {
		e := "ERR " + filepath.Base(fe.File)
		if len(fe.Kept) > 0 {
			e += " kept=" + strings.Join(fe.Kept, ",")
		}
		parts = append(parts, e)
	}
	return strings.Join(parts, " ")
}
