package driver

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// ErrBadRecord is returned (wrapped) for a line that is not a CRI record.
var ErrBadRecord = errors.New("malformed CRI log record")

// Record is one parsed line of a CRI log file.
type Record struct {
	Time    time.Time
	Stream  string // Stdout or Stderr
	Partial bool
	Msg     []byte // without the trailing newline; aliases the input
}

// ParseRecord parses one line (with or without its trailing newline).
func ParseRecord(line []byte) (Record, error) {
	line = bytes.TrimSuffix(line, []byte{'\n'})
	var r Record
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return r, fmt.Errorf("%w: no timestamp", ErrBadRecord)
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return r, fmt.Errorf("%w: timestamp: %w", ErrBadRecord, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok || (string(stream) != Stdout && string(stream) != Stderr) {
		return r, fmt.Errorf("%w: stream", ErrBadRecord)
	}
	tag, msg, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		// "<ts> <stream> F" with an empty message and no trailing space
		tag, msg = rest, nil
	}
	if len(tag) != 1 || (tag[0] != TagPartial && tag[0] != TagFull) {
		return r, fmt.Errorf("%w: tag %q", ErrBadRecord, tag)
	}
	r.Time, r.Stream, r.Partial, r.Msg = t, string(stream), tag[0] == TagPartial, msg
	return r, nil
}
