package cmdutil

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
)

// DryRun is kubectl's --dry-run strategy.
type DryRun int

// The strategies. podhost's apply and delete plan against the manifest dir
// and check what the daemon checks (decoding, Pod Security, order), so
// Server does what Client does; only the printed suffix differs, as kubectl's.
const (
	DryRunNone DryRun = iota
	DryRunClient
	DryRunServer
)

// dryRunBare is --dry-run given without a value (kubectl's NoOptDefVal).
const dryRunBare = "unchanged"

// AddDryRunFlag adds kubectl's --dry-run flag (none, client, server).
func AddDryRunFlag(fs *pflag.FlagSet, v *string) {
	fs.StringVar(v, "dry-run", "none", `kubectl's "none", "client" or "server": with client or server, print what would be done and write nothing (both check what the daemon checks; only the printed suffix differs)`)
	fs.Lookup("dry-run").NoOptDefVal = dryRunBare
}

// ParseDryRun reads --dry-run's value as kubectl's GetDryRunStrategy does,
// with its warning for the deprecated forms (bare, true, false; "" none).
func ParseDryRun(v string) (DryRun, string, error) {
	if b, err := strconv.ParseBool(v); err == nil {
		if b {
			return DryRunClient, fmt.Sprintf("--dry-run=%s is deprecated (boolean value) and can be replaced with --dry-run=client.", v), nil
		}
		return DryRunNone, fmt.Sprintf("--dry-run=%s is deprecated (boolean value) and can be replaced with --dry-run=none.", v), nil
	}
	switch v {
	case dryRunBare:
		return DryRunClient, "--dry-run is deprecated and can be replaced with --dry-run=client.", nil
	case "client":
		return DryRunClient, "", nil
	case "server":
		return DryRunServer, "", nil
	case "none", "":
		return DryRunNone, "", nil
	}
	return DryRunNone, "", fmt.Errorf(`Invalid dry-run value (%v). Must be "none", "server", or "client".`, v) //nolint:staticcheck // kubectl's words
}

// Suffix is what kubectl appends to an action in a dry run.
func (d DryRun) Suffix() string {
	switch d {
	case DryRunClient:
		return " (dry run)"
	case DryRunServer:
		return " (server dry run)"
	}
	return ""
}
