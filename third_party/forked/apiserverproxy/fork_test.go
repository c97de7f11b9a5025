package apiserverproxy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// forked are the files copied from k8s.io/apiserver/pkg/util/proxy.
var forked = []string{"streamtranslator.go", "streamtunnel.go", "websocket.go", "translatinghandler.go"}

// deleted matches the lines the fork may lack (README.md): the package
// clause (renamed), the metrics calls, the metrics import and the imports
// only those calls used. Lines matching it are dropped from both sides.
var deleted = regexp.MustCompile(`^package (proxy|apiserverproxy)$|metrics\.Inc(StreamTranslator|StreamTunnel)Request\(|^\t"k8s\.io/apiserver/pkg/util/proxy/metrics"$|^\t"(strconv|context)"$`)

// TestForkMatchesUpstream: each forked file is upstream's at the
// k8s.io/client-go version podhost builds with (the staging modules are
// released together), but for the deletions.
func TestForkMatchesUpstream(t *testing.T) {
	version := clientGoVersion(t)
	dir := upstreamDir(t, "k8s.io/apiserver@"+version)
	for _, f := range forked {
		up, err := os.ReadFile(filepath.Join(dir, "pkg/util/proxy", f))
		if err != nil {
			t.Fatalf("k8s.io/apiserver@%s: %v (a forked file is gone upstream: re-sync, see README.md)", version, err)
		}
		ours, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(normalize(up), normalize(ours)); d != "" {
			t.Errorf("%s differs from k8s.io/apiserver@%s/pkg/util/proxy/%s beyond the metrics deletions: re-sync the fork (README.md) (-upstream +fork):\n%s", f, version, f, d)
		}
	}
}

func normalize(src []byte) []string {
	var out []string
	for _, l := range strings.Split(string(src), "\n") {
		if !deleted.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

func clientGoVersion(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/client-go").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/client-go: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// upstreamDir is the module's directory in the module cache, downloaded if
// need be (outside any module, so go.mod is left alone); the test skips
// when it cannot be had.
func upstreamDir(t *testing.T, mod string) string {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Dir == "" {
		t.Skipf("cannot compare the fork: %s is not in the module cache and could not be downloaded: %v %s", mod, err, info.Error)
	}
	return info.Dir
}
