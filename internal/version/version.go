// Package version holds podhost's build version, set at link time:
//
//	go build -ldflags "-X github.com/podhost/podhost/internal/version.Version=v0.1.0 \
//	  -X github.com/podhost/podhost/internal/version.Commit=$(git rev-parse --short HEAD)" ./cmd/podhost
package version

import (
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X.
var (
	Version = "dev"
	Commit  = ""
)

// Info describes the running binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build information. Without an -X commit it falls back to
// the VCS revision embedded by the Go toolchain, if any.
func Get() Info {
	commit := Commit
	if commit == "" {
		commit = "unknown"
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" && s.Value != "" {
					commit = s.Value
				}
			}
		}
	}
	return Info{
		Version:   Version,
		Commit:    commit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}
