//go:build integration

// Command reap cleans up what integration test processes that died without
// closing their testenv.Env left behind (private containerds, shims,
// containers, mounts, cgroups under /podhost-it-*, CNI bridges, temp dirs).
// Envs whose test process still runs are left alone.
//
//	go run -tags integration ./internal/testenv/cmd/reap
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/podhost/podhost/internal/testenv"
)

func main() {
	dir := flag.String("dir", "", "where the Envs live (default $PODHOST_TEST_TMPDIR or the temp dir)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := testenv.Reap(ctx, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "reap:", err)
		os.Exit(1)
	}
}
