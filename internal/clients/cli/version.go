package cli

import (
	"encoding/json"
	"fmt"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/version"
)

// VersionOptions are the inputs of Version.
type VersionOptions struct {
	Output string // "" (text) or "json"
}

// Version prints the build version, commit, Go version and platform.
func Version(opts VersionOptions, s cmdutil.IOStreams) error {
	info := version.Get()
	switch opts.Output {
	case "":
		_, err := fmt.Fprintf(s.Out, "podhost %s (commit %s, %s, %s)\n", info.Version, info.Commit, info.GoVersion, info.Platform)
		return err
	case "json":
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	return fmt.Errorf("unsupported output format %q (want json)", opts.Output)
}
