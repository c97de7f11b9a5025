package daemon

import "os"

// podhostExecutable is this podhost's binary, beside which
// podhost-pause is looked for (sandbox.WithPause); "" if unknown.
func podhostExecutable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return exe
}
