package logs

import "github.com/podhost/podhost/internal/logdriver"

// The CRI log format is defined (written and parsed) in internal/logdriver,
// the package the standalone log driver binary is built from; these are
// its names as the rest of podhost uses them.
const (
	Stdout      = logdriver.Stdout
	Stderr      = logdriver.Stderr
	MaxLineSize = logdriver.MaxLineSize
)

// ErrBadRecord is returned (wrapped) for a line that is not a CRI record.
var ErrBadRecord = logdriver.ErrBadRecord

// Record is one parsed line of a CRI log file.
type Record = logdriver.Record

// ParseRecord parses one line (with or without its trailing newline).
func ParseRecord(line []byte) (Record, error) { return logdriver.ParseRecord(line) }
