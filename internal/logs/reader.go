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
	r := &reader{path: path, sink: newSink(opts, stdout, stderr), asm: newAssembler(), running: opts.Running}
	files := rotatedFiles(path)
	start := 0
	if opts.Tail >= 0 {
		start = tailStart(append(files, path), opts)
	}
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
	if err := r.sink.release(); err != nil {
		cur.Close()
		return err
	}
	if !opts.Follow {
		cur.Close()
		return r.sink.flush(r.asm)
	}
	return r.follow(ctx, cur)
}

type reader struct {
	path    string
	sink    *sink
	asm     *assembler
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
		if m, ok := r.asm.add(rec); ok {
			if err := r.sink.put(m); err != nil {
				return err
			}
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
// print the last opts.Tail messages.
func tailStart(files []string, opts ReadOptions) int {
	count := 0
	for i := len(files) - 1; i >= 0; i-- {
		count += countFull(files[i], opts.Since)
		if count >= opts.Tail {
			return i
		}
	}
	return 0
}

// countFull counts the F records at or after since in a file.
func countFull(name string, since time.Time) int {
	lf, err := openLog(name)
	if err != nil || lf == nil {
		return 0
	}
	defer lf.Close()
	n := 0
	for {
		line, err := lf.next()
		if err != nil {
			return n
		}
		if rec, err := ParseRecord(line); err == nil && !rec.Partial && !rec.Time.Before(since) {
			n++
		}
	}
}

// logFile reads complete lines from a file that may still be growing.
type logFile struct {
	f     *os.File
	br    *bufio.Reader
	carry []byte
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
		case err == nil && len(l.carry) == 0:
			return line, nil
		case err == nil:
			out := append(l.carry, line...)
			l.carry = nil
			return out, nil
		case errors.Is(err, bufio.ErrBufferFull):
			l.carry = append(l.carry, line...)
		case errors.Is(err, io.EOF):
			l.carry = append(l.carry, line...)
			return nil, io.EOF
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
