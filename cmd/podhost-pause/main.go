// Command podhost-pause is PID 1 of a pod's shared PID namespace
// (shareProcessNamespace: true): podhost starts one per such pod, outside
// any container, and it only reaps orphans until the pod's sandbox is
// removed (internal/host/sandbox/pause). It imports only the standard
// library and that package, so that each copy costs as little as a Go
// program can (docs/decisions.md).
package main

import "github.com/podhost/podhost/internal/host/sandbox/pause"

func main() { pause.Main() }
