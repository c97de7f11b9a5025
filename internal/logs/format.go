package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// Streams and tags of the CRI log format.
const (
	Stdout = "stdout"
	Stderr = "stderr"

	tagPartial = 'P'
	tagFull    = 'F'

	// MaxLineSize is the longest message a single record carries; longer
	// lines are split into partial records.
	MaxLineSize = 16 * 1024

	// timeFormat is RFC3339Nano with fixed-width nanoseconds, like the CRI
	// writer: records sort lexically and parse with time.RFC3339Nano.
	timeFormat = "2006-01-02T15:04:05.000000000Z07:00"
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

// appendRecord formats one record (including the trailing newline) onto buf.
func appendRecord(buf []byte, t time.Time, stream string, partial bool, msg []byte) []byte {
	buf = t.AppendFormat(buf, timeFormat)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ')
	if partial {
		buf = append(buf, tagPartial)
	} else {
		buf = append(buf, tagFull)
	}
	buf = append(buf, ' ')
	buf = append(buf, msg...)
	return append(buf, '\n')
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
	if len(tag) != 1 || (tag[0] != tagPartial && tag[0] != tagFull) {
		return r, fmt.Errorf("%w: tag %q", ErrBadRecord, tag)
	}
	r.Time, r.Stream, r.Partial, r.Msg = t, string(stream), tag[0] == tagPartial, msg
	return r, nil
}
