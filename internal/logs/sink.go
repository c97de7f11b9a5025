package logs

import (
	"io"
	"time"
)

// message is one log line, its partial records joined.
type message struct {
	t        time.Time // time of the first record
	stream   string
	msg      []byte
	complete bool
}

// assembler joins P records per stream (the two streams interleave).
type assembler struct {
	pending map[string]*message
}

func newAssembler() *assembler { return &assembler{pending: map[string]*message{}} }

// add returns the completed message, if rec completes one.
func (a *assembler) add(rec Record) (message, bool) {
	m := a.pending[rec.Stream]
	if m == nil {
		m = &message{t: rec.Time, stream: rec.Stream}
	}
	m.msg = append(m.msg, rec.Msg...)
	if rec.Partial {
		a.pending[rec.Stream] = m
		return message{}, false
	}
	delete(a.pending, rec.Stream)
	m.complete = true
	return *m, true
}

// sink filters (Since), buffers (Tail) and prints messages.
type sink struct {
	opts           ReadOptions
	stdout, stderr io.Writer
	collecting     bool
	ring           []message
	buf            []byte
}

func newSink(opts ReadOptions, stdout, stderr io.Writer) *sink {
	return &sink{opts: opts, stdout: stdout, stderr: stderr, collecting: opts.Tail >= 0}
}

func (s *sink) put(m message) error {
	if !s.opts.Since.IsZero() && m.t.Before(s.opts.Since) {
		return nil
	}
	if !s.collecting {
		return s.write(m)
	}
	if s.opts.Tail == 0 {
		return nil
	}
	if len(s.ring) == s.opts.Tail {
		copy(s.ring, s.ring[1:])
		s.ring = s.ring[:len(s.ring)-1]
	}
	s.ring = append(s.ring, m)
	return nil
}

// release prints what Tail kept and switches to printing directly.
func (s *sink) release() error {
	ring := s.ring
	s.ring, s.collecting = nil, false
	for _, m := range ring {
		if err := s.write(m); err != nil {
			return err
		}
	}
	return nil
}

// flush prints incomplete messages left at the end of a non-follow read.
func (s *sink) flush(a *assembler) error {
	for _, stream := range []string{Stdout, Stderr} {
		if m := a.pending[stream]; m != nil {
			delete(a.pending, stream)
			if err := s.put(*m); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *sink) write(m message) error {
	w := s.stdout
	if m.stream == Stderr {
		w = s.stderr
	}
	if w == nil {
		return nil
	}
	s.buf = s.buf[:0]
	if s.opts.Timestamps {
		s.buf = m.t.AppendFormat(s.buf, time.RFC3339Nano)
		s.buf = append(s.buf, ' ')
	}
	s.buf = append(s.buf, m.msg...)
	if m.complete {
		s.buf = append(s.buf, '\n')
	}
	_, err := w.Write(s.buf)
	return err
}
