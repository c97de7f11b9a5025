// Package driver is the container log driver: the process the
// containerd shim spawns per task (cio.BinaryIO) to copy the container's
// stdout and stderr into a CRI-format log file with size-based rotation.
//
// The driver installed beside podhost is its C port,
// native/podhost-log-driver (a Go process costs ~0.8 MiB per container, the
// C one ~0.1 MiB); this package is the reference implementation the C
// driver is tested against (conformance_test.go), the body of
// cmd/podhost-log-driver (built when there is no C compiler) and of the
// fallback `podhost log-driver`. It imports only the standard library (a
// unit test enforces it), which keeps a Go driver's private memory to the
// Go runtime's minimum (docs/decisions.md).
//
// On-disk format (one line per record, as the kubelet/CRI writes it):
//
//	<RFC3339Nano time> <stdout|stderr> <P|F> <message>\n
//
// P marks a partial record (a line longer than MaxLineSize split into
// chunks); F marks the record that completes a line. Rotation is size
// based: <path> is the live file, <path>.1 the newest rotated one ...
// <path>.N the oldest. internal/logs reads these files.
package driver
