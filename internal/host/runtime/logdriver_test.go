package runtime

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveLogDriver(t *testing.T) {
	const exe = "/usr/local/bin/podhost"
	tests := []struct {
		name       string
		configured string
		present    []string
		want       string
		warn       bool
	}{
		{"beside podhost", "", []string{"/usr/local/bin/podhost-log-driver"}, "/usr/local/bin/podhost-log-driver", false},
		{"missing: podhost itself", "", nil, exe, true},
		{"configured", "/opt/ld", []string{"/opt/ld", "/usr/local/bin/podhost-log-driver"}, "/opt/ld", false},
		{"configured missing: podhost itself", "/opt/ld", []string{"/usr/local/bin/podhost-log-driver"}, exe, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logBuf, nil))
			exists := func(p string) bool {
				for _, q := range tt.present {
					if p == q {
						return true
					}
				}
				return false
			}
			if got := resolveLogDriver(tt.configured, exe, exists, log); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if warned := strings.Contains(logBuf.String(), "log driver binary not found"); warned != tt.warn {
				t.Errorf("warned = %v, want %v: %s", warned, tt.warn, logBuf.String())
			}
		})
	}
}

func TestIsExecutable(t *testing.T) {
	dir := t.TempDir()
	exe, plain := filepath.Join(dir, "x"), filepath.Join(dir, "y")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{exe: true, plain: false, dir: false, filepath.Join(dir, "none"): false} {
		if got := isExecutable(path); got != want {
			t.Errorf("isExecutable(%s) = %v, want %v", path, got, want)
		}
	}
}
