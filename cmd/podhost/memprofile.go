//go:build !pprof

package main

import "runtime"

// The heap profile's allocation sampling is off in shipped builds: nothing
// reads it, and its buckets are never freed in a daemon that runs for
// months (docs/decisions.md 16). The linker used to turn it off by itself
// while nothing linked runtime/pprof; grpc (through the kubelet's
// streaming code) links it now, so it is turned off here, first thing.
func init() { runtime.MemProfileRate = 0 }
