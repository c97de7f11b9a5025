// Command podhost-log-driver is the container log driver: the containerd
// shim runs it once per container task (cio.BinaryIO) as
//
//	podhost-log-driver log-driver <encoded config>
//
// and it copies the container's stdout/stderr into the CRI-format log file,
// rotating it, independently of the podhost daemon. It is installed beside
// podhost and imports only the standard library and internal/logdriver, so
// that each copy costs little memory (docs/decisions.md).
package main

import "github.com/podhost/podhost/internal/logdriver"

func main() { logdriver.Main() }
