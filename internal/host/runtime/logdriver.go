package runtime

import (
	"log/slog"
	"os"
	"path/filepath"
)

// LogDriverName is the file name of the log driver binary
// (cmd/podhost-log-driver), installed beside podhost.
const LogDriverName = "podhost-log-driver"

// fileExists reports whether path names an executable regular file.
type fileExists func(path string) bool

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// resolveLogDriver picks the binary the shim runs as the log driver: the
// configured one, else LogDriverName in the directory of exe (the podhost
// executable). If that binary is missing it falls back to exe itself,
// which dispatches `podhost log-driver` before anything else, with a
// warning: it works, but each container then pays for a whole podhost
// process (docs/decisions.md).
func resolveLogDriver(configured, exe string, exists fileExists, log *slog.Logger) string {
	want := configured
	if want == "" {
		want = filepath.Join(filepath.Dir(exe), LogDriverName)
	}
	if exists(want) {
		return want
	}
	log.Warn("log driver binary not found, the shims will run podhost itself as the log driver (more memory per container)",
		"missing", want, "fallback", exe+" log-driver")
	return exe
}
