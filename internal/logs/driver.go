package logs

import "github.com/podhost/podhost/internal/logdriver"

// Rotation defaults.
const (
	DefaultMaxSize  = logdriver.DefaultMaxSize
	DefaultMaxFiles = logdriver.DefaultMaxFiles
)

// DriverCommand is the argv[1] the shim gives the log driver; the podhost
// binary still dispatches on it (the fallback when podhost-log-driver is
// not installed).
const DriverCommand = logdriver.Command

// DriverConfig is what the log driver needs; it travels in the binary URI.
type DriverConfig = logdriver.Config

// DriverArgs returns the args map for cio.BinaryIO (logdriver.Args).
func DriverArgs(cfg DriverConfig) map[string]string { return logdriver.Args(cfg) }

// RunDriver is the body of `podhost log-driver` (logdriver.Main); it never
// returns.
func RunDriver() { logdriver.Main() }
