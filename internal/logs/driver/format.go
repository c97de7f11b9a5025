package driver

import (
	"strconv"
	"time"
)

// Streams and tags of the CRI log format.
const (
	Stdout = "stdout"
	Stderr = "stderr"

	TagPartial = 'P'
	TagFull    = 'F'

	// MaxLineSize is the longest message a single record carries; longer
	// lines are split into partial records.
	MaxLineSize = 16 * 1024

	// TimeFormat is RFC3339Nano with fixed-width nanoseconds, like the CRI
	// writer: records sort lexically and parse with time.RFC3339Nano.
	TimeFormat = "2006-01-02T15:04:05.000000000Z07:00"
)

// AppendRecord formats one record (including the trailing newline) onto buf.
func AppendRecord(buf []byte, t time.Time, stream string, partial bool, msg []byte) []byte {
	buf = t.AppendFormat(buf, TimeFormat)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ')
	if partial {
		buf = append(buf, TagPartial)
	} else {
		buf = append(buf, TagFull)
	}
	buf = append(buf, ' ')
	buf = append(buf, msg...)
	return append(buf, '\n')
}

// RotatedPath returns the name of the n-th rotated file of path (n >= 1).
func RotatedPath(path string, n int) string {
	return path + "." + strconv.Itoa(n)
}
