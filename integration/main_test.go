//go:build integration

// Package integration holds podhost's root integration tests: they run
// against a real containerd 2.x, runc and the CNI plugins, nothing mocked.
// Run them with `make test-integration` (as root); see docs/testing.md.
//
// Every test binary gets one private testenv.Env (containerd, namespace,
// CNI config, cgroup prefix), set up in TestMain and torn down after the
// last test, also when tests fail or the run is interrupted.
package integration

import (
	"os"
	"testing"

	"github.com/podhost/podhost/internal/testenv"
)

// env is the package's test environment, ready before any test runs.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}
