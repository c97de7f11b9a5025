package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// TailAll asks Read for every message.
const TailAll = -1

// ReadOptions selects what Read prints. Tail follows kubectl: negative (use
// TailAll) = everything, 0 = nothing of the history (only new messages when
// following), N = the last N messages.
type ReadOptions struct {
	Follow     bool
	Tail       int
	Timestamps bool
	Since      time.Time
	// Running, when set, ends a Follow once it reports false (the
	// container stopped) and the file has not grown for a poll interval:
	// the kubelet's ReadLogs ends a follow when its container is no longer
	// running. Called at most once per poll interval. Nil: follow until
	// ctx is done.
	Running func() bool
}

// Read prints the messages of the CRI log file at path (and its rotated
// predecessors <path>.N .. <path>.1, oldest first) to stdout / stderr by
// stream, joining partial records. With Follow it keeps printing new
// messages, across rotations, until ctx is cancelled or opts.Running
// reports the container stopped, and then returns nil.
// A missing file is not an error: nothing is printed (or, with Follow, the
// file is waited for).
func Read(ctx context.Context, path string, opts ReadOptions, stdout, stderr io.Writer) error {
	files := rotatedFiles(path)
	start, skip := 0, 0
	if opts.Tail >= 0 {
		start, skip = tailStart(append(files, path), opts)
	}
	r := &reader{path: path, sink: newSink(opts, stdout, stderr, skip), running: opts.Running}
	for _, name := range files[min(start, len(files)):] {
		if err := r.readFile(name); err != nil {
			return err
		}
	}
	cur, err := openLog(path)
	if err != nil {
		return err
	}
	if cur != nil {
		if err := r.drain(cur); err != nil {
			cur.Close()
			return err
		}
	}
	if !opts.Follow {
		cur.Close()
		return r.sink.flush()
	}
	return r.follow(ctx, cur)
}

type reader struct {
	path    string
	sink    *sink
	running func() bool // nil: always
	lines   int         // records read so far
}

// readFile feeds every complete record of a (rotated, closed) file.
func (r *reader) readFile(name string) error {
	lf, err := openLog(name)
	if err != nil || lf == nil {
		return err
	}
	defer lf.Close()
	return r.drain(lf)
}

// drain feeds every complete line available in lf.
func (r *reader) drain(lf *logFile) error {
	for {
		line, err := lf.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		r.lines++
		rec, err := ParseRecord(line)
		if err != nil {
			continue // not ours / torn: skip
		}
		if err := r.sink.add(rec); err != nil {
			return err
		}
	}
}

// rotatedFiles lists the existing <path>.N .. <path>.1, oldest first.
func rotatedFiles(path string) []string {
	var out []string
	for i := 1; ; i++ {
		name := RotatedPath(path, i)
		if _, err := os.Stat(name); err != nil {
			break
		}
		out = append([]string{name}, out...)
	}
	return out
}

// tailStart returns the index of the first file (oldest first) needed to
// print the last opts.Tail messages, and how many messages from the start
// of that file are to be dropped. Messages are counted, not kept: a line
// of any length costs nothing here.
func tailStart(files []string, opts ReadOptions) (start, skip int) {
	count := 0
	for i := len(files) - 1; i >= 0; i-- {
		count += countMessages(files[i], opts.Since)
		if count >= opts.Tail {
			return i, count - opts.Tail
		}
	}
	return 0, 0
}

// countMessages counts the messages of a file that end in it and began at
// or after since (as the sink shows them).
func countMessages(name string, since time.Time) int {
	lf, err := openLog(name)
	if err != nil || lf == nil {
		return 0
	}
	defer lf.Close()
	var began [2]struct {
		open bool
		t    time.Time
	}
	n := 0
	for {
		line, err := lf.next()
		if err != nil {
			return n
		}
		rec, err := ParseRecord(line)
		if err != nil {
			continue
		}
		b := &began[0]
		if rec.Stream == Stderr {
			b = &began[1]
		}
		if !b.open {
			b.open, b.t = true, rec.Time
		}
		if !rec.Partial {
			b.open = false
			if !b.t.Before(since) {
				n++
			}
		}
	}
}

// maxRecordLine bounds a line of a log file: the log driver never writes
// one longer than a record of MaxLineSize bytes and its header. Anything
// longer is not a record (a torn or foreign file) and is skipped without
// being held.
const maxRecordLine = 4 * MaxLineSize

// logFile reads complete lines from a file that may still be growing.
type logFile struct {
	f       *os.File
	br      *bufio.Reader
	carry   []byte
	discard bool // skipping the rest of an overlong line
}

// openLog opens name; (nil, nil) if it does not exist.
func openLog(name string) (*logFile, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	return &logFile{f: f, br: bufio.NewReaderSize(f, 2*MaxLineSize)}, nil
}

// next returns the next complete line, or io.EOF when none is available
// yet (a torn last line is kept until its newline arrives).
func (l *logFile) next() ([]byte, error) {
	for {
		line, err := l.br.ReadSlice('\n')
		switch {
		case err == nil && l.discard:
			l.discard = false
		case err == nil && len(l.carry) == 0:
			return line, nil
		case err == nil:
			out := append(l.carry, line...)
			l.carry = nil
			return out, nil
		case errors.Is(err, bufio.ErrBufferFull), errors.Is(err, io.EOF):
			if !l.discard {
				l.carry = append(l.carry, line...)
			}
			if len(l.carry) > maxRecordLine {
				l.carry, l.discard = nil, true
			}
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
		default:
			return nil, fmt.Errorf("logs: read: %w", err)
		}
	}
}

func (l *logFile) Close() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}
