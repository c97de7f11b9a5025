package logs

import "github.com/podhost/podhost/internal/logs/driver"

// The CRI log format is defined (written and parsed) in internal/logs/driver,
// the package the standalone log driver binary is built from; these are
// its names as the rest of podhost uses them.
const (
	Stdout      = driver.Stdout
	Stderr      = driver.Stderr
	MaxLineSize = driver.MaxLineSize
)

// ErrBadRecord is returned (wrapped) for a line that is not a CRI record.
var ErrBadRecord = driver.ErrBadRecord

// Record is one parsed line of a CRI log file.
type Record = driver.Record

// ParseRecord parses one line (with or without its trailing newline).
func ParseRecord(line []byte) (Record, error) { return driver.ParseRecord(line) }
