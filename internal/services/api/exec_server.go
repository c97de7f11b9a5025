package api

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// exec serves the exec endpoint (protocol: exec.go).
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := ExecRequest{
		Namespace: r.PathValue("namespace"), Name: r.PathValue("name"), Container: q.Get("container"),
		Command: q["command"], Stdin: q.Get("stdin") == "true", TTY: q.Get("tty") == "true",
	}
	width, _ := strconv.ParseUint(q.Get("width"), 10, 16)
	height, _ := strconv.ParseUint(q.Get("height"), 10, 16)
	if len(req.Command) == 0 {
		http.Error(w, "you must specify at least one command for the container", http.StatusBadRequest)
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), ExecUpgrade) {
		http.Error(w, "exec needs \"Upgrade: "+ExecUpgrade+"\"", http.StatusUpgradeRequired)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	e := &execSession{w: w, cancel: cancel, readerDone: make(chan struct{})}
	if req.TTY && width > 0 && height > 0 {
		// The size from the start (the runtime sizes the console with
		// it), then each resize frame.
		e.resize = make(chan runtimeapi.TerminalSize, 1)
		e.resize <- runtimeapi.TerminalSize{Width: uint16(width), Height: uint16(height)}
		req.Width, req.Height, req.Resize = uint16(width), uint16(height), e.resize
	}
	var stdin io.Reader
	if req.Stdin {
		e.stdinR, e.stdinW = io.Pipe()
		stdin = execStdin{e}
	}
	code, err := s.b.Exec(ctx, req, stdin, e.writer(StreamStdout), e.writer(StreamStderr))
	if !e.finish(err == nil) {
		httpError(w, err)
		return
	}
	defer e.close()
	switch {
	case err == nil:
		_ = e.writeFrame(StreamExit, exitPayload(code))
	case ctx.Err() == nil:
		_ = e.writeFrame(StreamError, []byte(err.Error()))
	default:
		s.log.Debug("exec cancelled: client went away", "pod", req.Namespace+"/"+req.Name, "err", err)
	}
}

func httpError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	switch {
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrConflict):
		code = http.StatusConflict
	}
	http.Error(w, err.Error(), code)
}

// execSession is one exec connection. It is upgraded on the first use of a
// stream (or at the end); once the exec has finished without upgrading, it
// never upgrades, so the handler can still answer with an HTTP error.
type execSession struct {
	w      http.ResponseWriter
	cancel context.CancelFunc

	mu       sync.Mutex // guards the fields below
	upgraded bool
	finished bool
	upErr    error
	conn     net.Conn

	wmu sync.Mutex // serializes frame writes

	stdinR     *io.PipeReader // the command's stdin (nil without -i)
	stdinW     *io.PipeWriter
	resize     chan runtimeapi.TerminalSize // the terminal's sizes (nil without a TTY and a size)
	readerDone chan struct{}                // closed when readClient returns
}

// upgrade switches the connection to the exec protocol, once.
func (e *execSession) upgrade() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.upgraded || e.upErr != nil {
		return e.upErr
	}
	if e.finished {
		return errors.New("exec: finished")
	}
	conn, brw, err := http.NewResponseController(e.w).Hijack()
	if err != nil {
		e.upErr = fmt.Errorf("exec: hijack: %w", err)
		return e.upErr
	}
	e.conn, e.upgraded = conn, true
	_ = conn.SetDeadline(time.Time{})
	_, err = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+ExecUpgrade+"\r\n\r\n")
	if err != nil {
		e.upErr = fmt.Errorf("exec: upgrade: %w", err)
		e.cancel()
	}
	go e.readClient(brw.Reader) // brw.Reader holds any bytes read ahead
	return e.upErr
}

// finish marks the exec finished; upgrade (when ok) and report whether the
// connection is upgraded (false: answer with an HTTP error).
func (e *execSession) finish(ok bool) bool {
	if ok {
		_ = e.upgrade()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finished = true
	if e.stdinR != nil {
		e.stdinR.CloseWithError(errors.New("exec: finished"))
	}
	return e.upgraded
}

// close ends the connection and waits for readClient.
func (e *execSession) close() {
	e.conn.Close()
	<-e.readerDone
}

// readClient reads client frames: stdin data into the pipe (if any), EOF as
// a pipe close. A lost connection cancels the exec.
func (e *execSession) readClient(r io.Reader) {
	defer close(e.readerDone)
	for {
		stream, p, err := readFrame(r)
		if err != nil {
			e.cancel()
			if e.stdinW != nil {
				e.stdinW.CloseWithError(fmt.Errorf("exec: client connection: %w", err))
			}
			return
		}
		if stream == StreamResize && e.resize != nil && len(p) == 4 {
			e.resized(runtimeapi.TerminalSize{Width: binary.BigEndian.Uint16(p), Height: binary.BigEndian.Uint16(p[2:])})
			continue
		}
		if stream != StreamStdin || e.stdinW == nil {
			continue
		}
		if len(p) == 0 {
			_ = e.stdinW.Close()
			continue
		}
		_, _ = e.stdinW.Write(p) // fails once stdin is closed: drop the data
	}
}

// resized passes the newest size on: one that has not been applied yet is
// replaced (only the last size matters), so a client's resizes never block
// its stdin.
func (e *execSession) resized(sz runtimeapi.TerminalSize) {
	for {
		select {
		case e.resize <- sz:
			return
		default:
		}
		select {
		case <-e.resize:
		default:
		}
	}
}

func (e *execSession) writeFrame(stream byte, p []byte) error {
	if err := e.upgrade(); err != nil {
		return err
	}
	e.wmu.Lock()
	defer e.wmu.Unlock()
	for {
		n := min(len(p), chunkSize)
		if err := writeFrame(e.conn, stream, p[:n]); err != nil {
			return err
		}
		p = p[n:]
		if len(p) == 0 {
			return nil
		}
	}
}

func (e *execSession) writer(stream byte) io.Writer { return frameWriter{e: e, stream: stream} }

// frameWriter writes into frames of one stream.
type frameWriter struct {
	e      *execSession
	stream byte
}

func (f frameWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if err := f.e.writeFrame(f.stream, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// execStdin is the command's stdin: its first Read upgrades the connection.
type execStdin struct{ e *execSession }

func (s execStdin) Read(p []byte) (int, error) {
	if err := s.e.upgrade(); err != nil {
		return 0, err
	}
	return s.e.stdinR.Read(p)
}
