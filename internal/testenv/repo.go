//go:build integration

package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ModulePath is podhost's Go module path.
const ModulePath = "github.com/podhost/podhost"

var (
	repoRootOnce sync.Once
	repoRoot     string
	repoRootErr  error
)

// RepoRoot returns the root of the podhost module: $PODHOST_REPO_ROOT, else
// the directory of `go env GOMOD` run from the current directory (go test
// runs tests in their package dir), else the first parent of the current
// directory with podhost's go.mod.
func RepoRoot() (string, error) {
	repoRootOnce.Do(func() { repoRoot, repoRootErr = findRepoRoot() })
	return repoRoot, repoRootErr
}

func findRepoRoot() (string, error) {
	if d := os.Getenv("PODHOST_REPO_ROOT"); d != "" {
		if isPodhostModule(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		return "", fmt.Errorf("testenv: PODHOST_REPO_ROOT=%s has no podhost go.mod", d)
	}
	if out, err := exec.Command("go", "env", "GOMOD").Output(); err == nil {
		if gomod := strings.TrimSpace(string(out)); isPodhostModule(gomod) {
			return filepath.Dir(gomod), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if isPodhostModule(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("testenv: no podhost go.mod above %s (set PODHOST_REPO_ROOT)", wd)
		}
	}
}

func isPodhostModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 2 && fs[0] == "module" {
			return strings.Trim(fs[1], `"`) == ModulePath
		}
	}
	return false
}

var (
	depsOnce sync.Once
	depsBin  string
	depsErr  error
)

// Deps makes sure the test dependencies are installed and returns the dir
// holding containerd, containerd-shim-runc-v2 and ctr. With
// $PODHOST_CONTAINERD_BIN_DIR set it only checks that dir; otherwise it runs
// <repo>/scripts/deps.sh (idempotent, silent when there is nothing to do;
// its last stdout line is the bin dir). Once per process.
func Deps(ctx context.Context, repoRoot string) (string, error) {
	depsOnce.Do(func() { depsBin, depsErr = deps(ctx, repoRoot) })
	return depsBin, depsErr
}

func deps(ctx context.Context, repoRoot string) (string, error) {
	bin := os.Getenv("PODHOST_CONTAINERD_BIN_DIR")
	if bin == "" {
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot, "scripts", "deps.sh"))
		cmd.Dir = repoRoot
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("testenv: scripts/deps.sh: %w", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		bin = strings.TrimSpace(lines[len(lines)-1])
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr"} {
		if _, err := exec.LookPath(filepath.Join(bin, b)); err != nil {
			return "", fmt.Errorf("testenv: %s missing in %s: %w", b, bin, err)
		}
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return "", fmt.Errorf("testenv: runc: %w", err)
	}
	return bin, nil
}

// LogDriverName is the log driver binary's file name; podhost looks for
// it beside its own executable (internal/host/runtime.LogDriverName).
const LogDriverName = "podhost-log-driver"

// PauseName is the pause binary's file name (PID 1 of shared PID
// namespaces); podhost looks for it beside its own executable
// (internal/host/sandbox/pause.Name).
const PauseName = "podhost-pause"

// BuildPodhost builds ./cmd/podhost of the module at repoRoot into out,
// and the log driver beside it with scripts/build-log-driver.sh (as `make
// build` does: the C driver, or the Go one without a C compiler), so that
// a podhost started from out finds its log driver by default.
func BuildPodhost(ctx context.Context, repoRoot, out string) error {
	builds := [][]string{
		{"go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/podhost"}, // as make build, with CGO_ENABLED=0
		{"scripts/build-log-driver.sh", filepath.Join(filepath.Dir(out), LogDriverName)},
		{"go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(filepath.Dir(out), PauseName), "./cmd/podhost-pause"},
	}
	for _, args := range builds {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("testenv: %s: %w\n%s", strings.Join(args, " "), err, buf.Bytes())
		}
	}
	return nil
}

// PodhostClusterBin builds ./cmd/podhost-cluster beside e.PodhostBin, as
// make build does, the first time a test asks for it (only the cluster
// tests need it), and returns its path.
func (e *Env) PodhostClusterBin(tb testing.TB) string {
	tb.Helper()
	bin := e.RequirePodhost(tb)
	e.clusterOnce.Do(func() {
		out := filepath.Join(filepath.Dir(bin), "podhost-cluster")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/podhost-cluster")
		cmd.Dir = e.RepoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			e.clusterErr = fmt.Errorf("testenv: go build ./cmd/podhost-cluster: %w\n%s", err, b)
			return
		}
		e.clusterBin = out
	})
	if e.clusterErr != nil {
		tb.Fatal(e.clusterErr)
	}
	return e.clusterBin
}

// RequirePodhost returns e.PodhostBin, failing tb if Setup could not build
// ./cmd/podhost.
func RequirePodhost(tb testing.TB, e *Env) string {
	tb.Helper()
	if e == nil {
		tb.Fatal("testenv: no Env (TestMain did not run testenv.Main?)")
	}
	if e.PodhostBin == "" {
		tb.Fatalf("podhost binary not available: %v", e.PodhostBuildErr)
	}
	return e.PodhostBin
}

// RequirePodhost is RequirePodhost(tb, e).
func (e *Env) RequirePodhost(tb testing.TB) string {
	tb.Helper()
	return RequirePodhost(tb, e)
}

// writeCNIConfig writes <CNIConfDir>/10-podhost-it.conflist: the shipped
// default conflist (manifests/cni/10-podhost.conflist) with this Env's
// network name, bridge, subnet and a lease dir under Dir, so tests never
// touch podhost0, 10.89.0.0/16 or /run/podhost of a real installation.
func (e *Env) writeCNIConfig() error {
	src := filepath.Join(e.RepoRoot, "manifests", "cni", "10-podhost.conflist")
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var conf map[string]any
	if err := json.Unmarshal(b, &conf); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	conf["name"] = e.CNINetwork
	plugins, _ := conf["plugins"].([]any)
	found := false
	for _, p := range plugins {
		pm, _ := p.(map[string]any)
		if pm == nil || pm["type"] != "bridge" {
			continue
		}
		found = true
		pm["bridge"] = e.CNIBridge
		ipam, _ := pm["ipam"].(map[string]any)
		if ipam == nil {
			return fmt.Errorf("%s: bridge plugin without ipam", src)
		}
		ipam["ranges"] = []any{[]any{map[string]any{"subnet": e.CNISubnet}}}
		ipam["dataDir"] = filepath.Join(e.Dir, "cni", "networks")
	}
	if !found {
		return errors.New(src + ": no bridge plugin")
	}
	out, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.CNIConfDir, "10-podhost-it.conflist"), append(out, '\n'), 0o644)
}
