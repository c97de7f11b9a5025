package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/podhost/podhost/"

// allowed lists, for each wing, the wings its packages may import (besides
// their own). A wing is the first element of a package's path under
// internal/; daemon, config and version are wings of one package each.
// The arrows only point down:
//
//	model ← logs, desired ← host ← kubelet ← ops ← clients, daemon
//	model, desired ← services ← clients, daemon;  config, version ← clients, daemon
//
// A new package goes in a wing (TestEveryPackageInAWing); a new arrow is a
// change of this table, reviewed as such.
var allowed = map[string][]string{
	"model":    {},                                              // shared vocabulary: plain types, pure functions
	"logs":     {"model"},                                       // container log files: driver, reading, gc
	"desired":  {"model"},                                       // what the user asked for: manifests → desired set
	"host":     {"model", "logs", "desired"},                    // adapters: containerd, namespaces, CNI, cgroups, disk, bbolt
	"kubelet":  {"model", "logs", "desired", "host"},            // the engine: sync loop, workers, syncer, status, probes
	"ops":      {"model", "logs", "desired", "host", "kubelet"}, // the node's own operation around the engine
	"services": {"model", "desired"},                            // what the node serves; the node through Backend interfaces
	"clients":  {"model", "logs", "desired", "host", "kubelet", "ops", "services", "config", "version"},
	"daemon":   {"model", "logs", "desired", "host", "kubelet", "ops", "services", "clients", "config", "version"},
	"config":   {},
	"version":  {},
	"testenv":  {"*"}, // test support, imported by tests only
}

// notLinked: packages of these wings must not link these (go list -deps): the
// core speaks runtimeapi and records, host/runtime and host/state link them.
var notLinked = map[string][]string{
	"github.com/containerd/containerd/v2/client": {"model", "logs", "desired", "kubelet", "services"},
	"go.etcd.io/bbolt":                           {"model", "logs", "desired", "kubelet", "ops", "services"},
}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

var (
	listOnce sync.Once
	listed   []pkg
	listErr  error
)

// list: every package of the module, with the integration tag (testenv).
func list(t *testing.T) []pkg {
	t.Helper()
	listOnce.Do(func() { listed, listErr = goList() })
	if listErr != nil {
		t.Fatal(listErr)
	}
	return listed
}

func goList() ([]pkg, error) {
	touchSources()
	cmd := exec.Command("go", "list", "-tags", "integration", "-e", "-json=ImportPath,Imports,Deps", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// wing: the wing of an internal package, "" for other packages.
func wing(path string) string {
	rest, ok := strings.CutPrefix(path, module+"internal/")
	if !ok {
		return ""
	}
	w, _, _ := strings.Cut(rest, "/")
	return w
}

func TestEveryPackageInAWing(t *testing.T) {
	for _, p := range list(t) {
		if w := wing(p.ImportPath); w != "" && w != "archtest" && w != "tools" && allowed[w] == nil {
			t.Errorf("%s is in no wing: put it under one (see allowed in %s)", p.ImportPath, "internal/archtest/wings_test.go")
		}
	}
}

func TestWingImports(t *testing.T) {
	for _, p := range list(t) {
		from := wing(p.ImportPath)
		for _, imp := range p.Imports {
			to := wing(imp)
			if from == "" || to == "" || to == from || slices.Contains(allowed[from], "*") {
				continue
			}
			if to == "testenv" {
				t.Errorf("%s imports %s: test support is for tests", p.ImportPath, imp)
			} else if !slices.Contains(allowed[from], to) {
				t.Errorf("%s imports %s: %s may not import %s (allowed: %v)", p.ImportPath, imp, from, to, allowed[from])
			}
		}
	}
}

func TestCoreLinks(t *testing.T) {
	for _, p := range list(t) {
		for dep, wings := range notLinked {
			if slices.Contains(wings, wing(p.ImportPath)) && slices.Contains(p.Deps, dep) {
				t.Errorf("%s links %s", p.ImportPath, dep)
			}
		}
	}
}

// touchSources stats every Go file of the module: go test caches a result
// keyed on the files a test looked at, and `go list` reads them in another
// process, so without this an import added anywhere would not re-run the
// test.
func touchSources() {
	_ = filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "_output" || d.Name() == "bin"):
			return filepath.SkipDir
		case strings.HasSuffix(p, ".go"):
			_, _ = os.Stat(p)
		}
		return nil
	})
}
