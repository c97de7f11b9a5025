// Command podhost-failpoint is a CNI plugin for tests: chained after the
// real plugins, it fails or hangs ADD, DEL and CHECK as its control file
// says, and otherwise passes prevResult through. See package failpoint.
package main

import (
	"os"

	"github.com/podhost/podhost/internal/testenv/failpoint"
)

func main() {
	os.Exit(failpoint.NewPlugin(os.Stdout).Main(os.Getenv, os.Stdin, os.Stdout))
}
