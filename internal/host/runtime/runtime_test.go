package runtime

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestNormalizeRef(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                     "docker.io/library/busybox:latest",
		"busybox:1.36":                "docker.io/library/busybox:1.36",
		"me/app":                      "docker.io/me/app:latest",
		"127.0.0.1:5000/x/y:2":        "127.0.0.1:5000/x/y:2",
		"podhost.test/busybox:1":      "podhost.test/busybox:1",
		"localhost/img@sha256:" + h64: "localhost/img@sha256:" + h64,
	} {
		got, err := NormalizeRef(in)
		if err != nil || got != want {
			t.Errorf("%s: got %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := NormalizeRef("Busybox"); !errors.Is(err, ErrInvalidImageName) {
		t.Errorf("invalid name: %v", err)
	}
}

const h64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestImportRefName(t *testing.T) {
	for in, want := range map[string]string{
		"1.0":                    "",
		"busybox:1":              "docker.io/library/busybox:1",
		"podhost.test/busybox:1": "podhost.test/busybox:1",
		"bad name:x/":            "",
	} {
		if got := importRefName(in); got != want {
			t.Errorf("%q: got %q want %q", in, got, want)
		}
	}
}

func writeAuth(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCredentials(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString([]byte("alice:s3:cret"))
	first := writeAuth(t, `{"auths":{"https://index.docker.io/v1/":{"auth":"`+enc+`"},
		"127.0.0.1:5000":{"username":"bob","password":"pw"}}}`)
	second := writeAuth(t, `{"auths":{"ghcr.io":{"identitytoken":"tok"},"127.0.0.1:5000":{"username":"x","password":"y"}}}`)
	broken := writeAuth(t, `{`)
	r := &Runtime{AuthFiles: []string{"/nonexistent/auth.json", broken, first, second}}
	for host, want := range map[string][2]string{
		"registry-1.docker.io": {"alice", "s3:cret"},
		"127.0.0.1:5000":       {"bob", "pw"},
		"ghcr.io":              {"", "tok"},
		"quay.io":              {"", ""},
	} {
		u, s, err := r.credentials(host)
		if err != nil || u != want[0] || s != want[1] {
			t.Errorf("%s: got %q %q %v, want %v", host, u, s, err, want)
		}
	}
}

func TestStopSignal(t *testing.T) {
	r := &Runtime{}
	for in, want := range map[string]syscall.Signal{
		"": syscall.SIGTERM, "SIGQUIT": syscall.SIGQUIT, "INT": syscall.SIGINT, "9": syscall.SIGKILL, "bogus": syscall.SIGTERM,
	} {
		if got := r.stopSignal(in); got != want {
			t.Errorf("%q: got %v want %v", in, got, want)
		}
	}
}

func TestExitReason(t *testing.T) {
	if exitReason(0, false) != "Completed" || exitReason(1, false) != "Error" || exitReason(137, true) != "OOMKilled" || exitReason(0, true) != "OOMKilled" {
		t.Fatal("exit reasons")
	}
}

func TestEventFilters(t *testing.T) {
	r := &Runtime{ns: "podhost-it-1-2"}
	f := r.eventFilters()
	if len(f) != 3 || f[0] != `topic=="/tasks/exit",namespace=="podhost-it-1-2"` {
		t.Fatalf("filters %v", f)
	}
	for _, s := range f {
		if !strings.Contains(s, `namespace=="podhost-it-1-2"`) {
			t.Fatalf("filter without namespace: %s", s)
		}
	}
}
