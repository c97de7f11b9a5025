package logs

import (
	"io"
	"time"
)

// MaxJoined is the most of one line the reader holds: the P records of a
// line are joined (so that a line of a few records is written whole and a
// line of the other stream, written to the same writer, does not land in
// its middle), but a longer line is written in pieces as its records come,
// its timestamp before the first piece only. A container printing 300 MB
// without a newline thus streams through `logs -f` in bounded memory; the
// kubelet's ReadLogs never joins records at all.
const MaxJoined = 64 << 10

// line is the state of one stream's current message (line).
type line struct {
	open    bool      // a message has begun and not ended
	show    bool      // it passes Since and Tail
	started bool      // a piece of it was written (its timestamp with it)
	t       time.Time // time of its first record
	buf     []byte    // what is not written yet, at most MaxJoined
}

// sink filters messages (Since, Tail) and writes them per stream, joining
// a line's partial records up to MaxJoined.
type sink struct {
	opts           ReadOptions
	stdout, stderr io.Writer
	skip           int // messages to drop first (Tail: all but the last N)
	seen           int // messages begun that passed Since
	lines          map[string]*line
	out            []byte
}

func newSink(opts ReadOptions, stdout, stderr io.Writer, skip int) *sink {
	return &sink{opts: opts, stdout: stdout, stderr: stderr, skip: skip,
		lines: map[string]*line{Stdout: {}, Stderr: {}}}
}

// add takes one record of the log.
func (s *sink) add(rec Record) error {
	l := s.lines[rec.Stream]
	if l == nil {
		return nil
	}
	if !l.open {
		s.begin(l, rec.Time)
	}
	if l.show {
		l.buf = append(l.buf, rec.Msg...)
	}
	if !rec.Partial {
		err := s.write(rec.Stream, l, true)
		l.open, l.started, l.buf = false, false, l.buf[:0]
		return err
	}
	if len(l.buf) < MaxJoined {
		return nil
	}
	return s.write(rec.Stream, l, false)
}

// begin starts a message: it is shown when it is not before Since and not
// among the first skip messages.
func (s *sink) begin(l *line, t time.Time) {
	l.open, l.started, l.t, l.buf = true, false, t, l.buf[:0]
	l.show = false
	if !s.opts.Since.IsZero() && t.Before(s.opts.Since) {
		return
	}
	s.seen++
	l.show = s.seen > s.skip
}

// flush writes what is left of unfinished messages at the end of a read.
func (s *sink) flush() error {
	for _, stream := range []string{Stdout, Stderr} {
		l := s.lines[stream]
		if !l.open {
			continue
		}
		err := s.write(stream, l, false)
		l.open, l.started = false, false
		if err != nil {
			return err
		}
	}
	return nil
}

// write writes l's buffered bytes (and the newline ending the message when
// end), with the message's timestamp before its first piece.
func (s *sink) write(stream string, l *line, end bool) error {
	if !l.show {
		return nil
	}
	w := s.stdout
	if stream == Stderr {
		w = s.stderr
	}
	if w == nil || len(l.buf) == 0 && !end && l.started {
		l.buf = l.buf[:0]
		return nil
	}
	s.out = s.out[:0]
	if s.opts.Timestamps && !l.started {
		s.out = l.t.AppendFormat(s.out, time.RFC3339Nano)
		s.out = append(s.out, ' ')
	}
	s.out = append(s.out, l.buf...)
	if end {
		s.out = append(s.out, '\n')
	}
	l.started, l.buf = true, l.buf[:0]
	if len(s.out) == 0 {
		return nil
	}
	_, err := w.Write(s.out)
	return err
}
