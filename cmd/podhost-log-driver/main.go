// Command podhost-log-driver is the container log driver: the containerd
// shim runs it once per container task (cio.BinaryIO) as
//
//	podhost-log-driver log-driver <encoded config>
//
// and it copies the container's stdout/stderr into the CRI-format log file,
// rotating it, independently of the podhost daemon. The driver `make build`
// installs beside podhost is the C one (native/podhost-log-driver, ~0.1 MiB
// PSS per copy against ~0.8 MiB for this one); this Go driver is the
// reference it is tested against and what `make build` builds without a C
// compiler. It imports only the standard library and internal/logs/driver,
// so that each copy costs as little as a Go program can (docs/decisions.md).
package main

import "github.com/podhost/podhost/internal/logs/driver"

func main() { driver.Main() }
