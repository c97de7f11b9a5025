package driver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Defaults for rotation.
const (
	DefaultMaxSize  = 10 << 20 // bytes per file before rotating
	DefaultMaxFiles = 5        // rotated files kept: <path>.1 .. <path>.5
)

// File modes of what the writer creates.
const (
	dirMode  = 0o755
	fileMode = 0o640
)

// Config configures a Writer; the shim passes it to the driver in argv
// (Args / ParseArgs).
type Config struct {
	Path string
	// MaxSize is the size in bytes at which the live file is rotated;
	// <= 0 disables rotation.
	MaxSize int64
	// MaxFiles is the number of rotated files kept (<path>.1 newest ..
	// <path>.MaxFiles oldest); 0 drops the old content on rotation.
	MaxFiles int
}

// Writer appends CRI records to a log file, rotating it by size. It is safe
// for concurrent use: each record is written with one write(2) under a lock,
// so records of the two streams never interleave within a line.
type Writer struct {
	cfg Config
	now func() time.Time

	mu   sync.Mutex
	f    *os.File
	size int64
	buf  []byte
}

// OpenWriter creates the directory (0755) and opens (appends to) the file
// (0640).
func OpenWriter(cfg Config) (*Writer, error) {
	if cfg.Path == "" {
		return nil, errors.New("logdriver: empty log path")
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Path), dirMode); err != nil {
		return nil, fmt.Errorf("logdriver: create log dir: %w", err)
	}
	w := &Writer{cfg: cfg, now: time.Now}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) open() error {
	f, err := os.OpenFile(w.cfg.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("logdriver: open %s: %w", w.cfg.Path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("logdriver: stat %s: %w", w.cfg.Path, err)
	}
	w.f, w.size = f, st.Size()
	return nil
}

// WriteRecord writes one record stamped with the current time.
func (w *Writer) WriteRecord(stream string, partial bool, msg []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return fs.ErrClosed
	}
	w.buf = AppendRecord(w.buf[:0], w.now(), stream, partial, msg)
	if w.cfg.MaxSize > 0 && w.size > 0 && w.size+int64(len(w.buf)) > w.cfg.MaxSize {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	n, err := w.f.Write(w.buf)
	w.size += int64(n)
	if err != nil {
		return fmt.Errorf("logdriver: write %s: %w", w.cfg.Path, err)
	}
	return nil
}

// rotate shifts <path>.i to <path>.i+1, <path> to <path>.1 and reopens
// <path>. Called with mu held.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("logdriver: close before rotation: %w", err)
	}
	w.f = nil
	p := w.cfg.Path
	if w.cfg.MaxFiles <= 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("logdriver: rotate: %w", err)
		}
		return w.open()
	}
	for i := w.cfg.MaxFiles - 1; i >= 1; i-- {
		err := os.Rename(RotatedPath(p, i), RotatedPath(p, i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("logdriver: rotate: %w", err)
		}
	}
	if err := os.Rename(p, RotatedPath(p, 1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("logdriver: rotate: %w", err)
	}
	return w.open()
}

// SetClock replaces the clock that stamps records (tests, replays).
func (w *Writer) SetClock(now func() time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = now
}

// Path returns the live file's path.
func (w *Writer) Path() string { return w.cfg.Path }

// Close closes the file. Further writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Copy reads r line by line until EOF and writes each line as records of
// the given stream: lines longer than MaxLineSize become P records of
// MaxLineSize bytes followed by an F record; "\r\n" and "\n" are stripped.
// Bytes left without a newline at EOF are written as an F record. A write
// error does not stop the copy (the container must never block on a full
// pipe); the first one is returned at the end.
func (w *Writer) Copy(stream string, r io.Reader) error {
	var werr error
	write := func(partial bool, msg []byte) {
		if err := w.WriteRecord(stream, partial, msg); err != nil && werr == nil {
			werr = err
		}
	}
	br := bufio.NewReaderSize(r, MaxLineSize)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			write(false, bytes.TrimSuffix(line[:len(line)-1], []byte{'\r'}))
		case errors.Is(err, bufio.ErrBufferFull):
			write(true, line)
		default:
			if len(line) > 0 {
				write(false, line)
			}
			if !errors.Is(err, io.EOF) {
				return errors.Join(werr, fmt.Errorf("logdriver: read %s: %w", stream, err))
			}
			return werr
		}
	}
}
