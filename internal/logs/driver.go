package logs

import "github.com/podhost/podhost/internal/logs/driver"

// Rotation defaults.
const (
	DefaultMaxSize  = driver.DefaultMaxSize
	DefaultMaxFiles = driver.DefaultMaxFiles
)

// DriverCommand is the argv[1] the shim gives the log driver; the podhost
// binary still dispatches on it (the fallback when podhost-log-driver is
// not installed).
const DriverCommand = driver.Command

// DriverConfig is what the log driver needs; it travels in the binary URI.
type DriverConfig = driver.Config

// DriverArgs returns the args map for cio.BinaryIO (driver.Args).
func DriverArgs(cfg DriverConfig) map[string]string { return driver.Args(cfg) }

// RunDriver is the body of `podhost log-driver` (driver.Main); it never
// returns.
func RunDriver() { driver.Main() }
