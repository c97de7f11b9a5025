//go:build pprof

package main

// Built only with -tags pprof (profiling the daemon, e.g. for make bench):
// PODHOST_PPROF=127.0.0.1:6060 serves net/http/pprof there.

import (
	"net/http"
	_ "net/http/pprof" // the handlers, on the default mux
	"os"
)

func init() {
	if addr := os.Getenv("PODHOST_PPROF"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
