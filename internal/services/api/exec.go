package api

// Exec protocol (`podhost exec`).
//
// The client sends
//
//	POST /v1/pods/{namespace}/{name}/exec?container=C&tty=BOOL&stdin=BOOL[&width=W&height=H]&command=ARG0&command=ARG1...
//	Connection: Upgrade
//	Upgrade: podhost-exec
//
// Errors found before the command starts (unknown pod or container: 404;
// container not running: 409; anything else: 400) are plain HTTP responses
// whose body is the message. Otherwise the server answers
// "HTTP/1.1 101 Switching Protocols" with "Upgrade: podhost-exec", takes the
// connection over, and both sides speak frames until the server closes it:
//
//	frame = stream (1 byte) | length (4 bytes, big-endian) | payload (length bytes, at most 1 MiB)
//
//	client → server   0 stdin data; a zero-length stream-0 frame is stdin's EOF
//	                    (frames with -i off are ignored)
//	                  5 resize, with a TTY: width and height, 2 bytes each, big-endian
//	                    (the client's terminal changed size; its size at the start
//	                    is the query's width and height); ignored without a TTY
//	server → client   1 stdout data
//	                  2 stderr data (never sent with a TTY: its output is on stdout)
//	                  3 exit: payload is the exit code, 4-byte big-endian int32; the last frame
//	                  4 error: payload is the message; the last frame
//
// The server upgrades lazily, when the command first reads stdin or writes
// output, or when it ends, so that errors before the start are HTTP errors.
// A client that goes away (connection closed) cancels the exec: the runtime
// kills the process.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// Frame streams of the exec protocol.
const (
	StreamStdin  byte = 0
	StreamStdout byte = 1
	StreamStderr byte = 2
	StreamExit   byte = 3
	StreamError  byte = 4
	StreamResize byte = 5
)

const (
	// ExecUpgrade is the Upgrade protocol token of the exec endpoint.
	ExecUpgrade = "podhost-exec"
	// maxFrame is the largest payload a reader accepts.
	maxFrame = 1 << 20
	// chunkSize splits large writes into frames.
	chunkSize = 32 << 10
)

// ErrConflict is returned by backends when the target is in the wrong state
// (an exec into a container that is not running).
var ErrConflict = errors.New("conflict")

// ExecRequest selects the container and the command to run in it.
type ExecRequest struct {
	Namespace, Name, Container string
	Command                    []string
	Stdin, TTY                 bool
	// Width and Height, with TTY, are the client's terminal size when the
	// command starts (0: unknown); Resize carries its later sizes (the
	// client's to send; the server's received, the first size included).
	Width, Height uint16
	Resize        <-chan runtimeapi.TerminalSize
}

// statusError is an error whose message is exactly msg and which matches
// its sentinel with errors.Is.
type statusError struct {
	msg      string
	sentinel error
}

func (e *statusError) Error() string { return e.msg }
func (e *statusError) Unwrap() error { return e.sentinel }

// NotFoundf returns an error matching ErrNotFound with the formatted message
// (and nothing appended).
func NotFoundf(format string, args ...any) error {
	return &statusError{msg: fmt.Sprintf(format, args...), sentinel: ErrNotFound}
}

// Conflictf returns an error matching ErrConflict with the formatted message
// (and nothing appended).
func Conflictf(format string, args ...any) error {
	return &statusError{msg: fmt.Sprintf(format, args...), sentinel: ErrConflict}
}

// writeFrame writes one frame; one write call for a net.Conn (writev).
func writeFrame(w io.Writer, stream byte, p []byte) error {
	var hdr [5]byte
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	bufs := net.Buffers{hdr[:], p}
	_, err := bufs.WriteTo(w)
	return err
}

// readFrame reads one frame. A clean end of r before a frame is io.EOF; a
// frame cut short is io.ErrUnexpectedEOF.
func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("exec: frame of %d bytes exceeds the %d-byte limit", n, maxFrame)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[0], p, nil
}

func exitPayload(code int) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(int32(code)))
}

// ExecQuery encodes req as the exec endpoint's path and query.
func ExecQuery(req ExecRequest) string {
	q := url.Values{}
	q.Set("container", req.Container)
	q.Set("tty", strconv.FormatBool(req.TTY))
	q.Set("stdin", strconv.FormatBool(req.Stdin))
	if req.TTY && req.Width > 0 && req.Height > 0 {
		q.Set("width", strconv.Itoa(int(req.Width)))
		q.Set("height", strconv.Itoa(int(req.Height)))
	}
	q["command"] = req.Command
	return "/v1/pods/" + url.PathEscape(req.Namespace) + "/" + url.PathEscape(req.Name) + "/exec?" + q.Encode()
}

// Exec runs req.Command in a running container through the daemon and
// returns its exit code. With req.Stdin, stdin is copied to the command
// until its EOF (a nil stdin is an empty one); the copy may outlive the call
// if a Read blocks. With req.TTY all output comes on stdout. Cancelling ctx
// closes the connection, which makes the daemon kill the command; Exec then
// returns ctx's error.
func (c *Client) Exec(ctx context.Context, req ExecRequest, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, "unix", c.socket)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return -1, fmt.Errorf("%w (socket %s)", ErrDaemonDown, c.socket)
		}
		return -1, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	br, err := execHandshake(conn, req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		return -1, err
	}
	fw := &frameConn{w: conn}
	if req.Stdin {
		if stdin == nil {
			stdin = strings.NewReader("")
		}
		go pumpStdin(fw, stdin)
	}
	if req.TTY && req.Resize != nil {
		done := make(chan struct{})
		defer close(done)
		go pumpResizes(fw, req.Resize, done)
	}
	code, err := readOutput(br, stdout, stderr)
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	return code, err
}

// execHandshake sends the upgrade request and reads the answer: 101, or an
// error carrying the server's message (matching ErrNotFound for 404 and
// ErrConflict for 409).
func execHandshake(conn net.Conn, req ExecRequest) (*bufio.Reader, error) {
	hreq, err := http.NewRequest(http.MethodPost, "http://podhost"+ExecQuery(req), nil)
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Connection", "Upgrade")
	hreq.Header.Set("Upgrade", ExecUpgrade)
	if err := hreq.Write(conn); err != nil {
		return nil, fmt.Errorf("exec: send request: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, hreq)
	if err != nil {
		return nil, fmt.Errorf("exec: read response: %w", err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return br, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = resp.Status
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return nil, &statusError{msg: msg, sentinel: ErrNotFound}
	case http.StatusConflict:
		return nil, &statusError{msg: msg, sentinel: ErrConflict}
	}
	return nil, errors.New(msg)
}

// frameConn serializes the client's frame writes (stdin, resizes).
type frameConn struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameConn) frame(stream byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return writeFrame(f.w, stream, p)
}

// pumpStdin copies stdin into stdin frames, then sends the EOF frame.
func pumpStdin(w *frameConn, stdin io.Reader) {
	buf := make([]byte, chunkSize)
	for {
		n, err := stdin.Read(buf)
		if n > 0 {
			if werr := w.frame(StreamStdin, buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = w.frame(StreamStdin, nil)
			return
		}
	}
}

// pumpResizes sends each size of resize as a resize frame, until resize is
// closed or done is.
func pumpResizes(w *frameConn, resize <-chan runtimeapi.TerminalSize, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sz, ok := <-resize:
			if !ok {
				return
			}
			if w.frame(StreamResize, resizePayload(sz)) != nil {
				return
			}
		}
	}
}

func resizePayload(sz runtimeapi.TerminalSize) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, sz.Width), sz.Height)
}

// readOutput copies output frames until the exit or error frame.
func readOutput(r io.Reader, stdout, stderr io.Writer) (int, error) {
	for {
		stream, p, err := readFrame(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return -1, fmt.Errorf("exec: connection to the daemon lost before the command's exit status: %w", err)
		}
		switch stream {
		case StreamStdout:
			err = writeOutput(stdout, p)
		case StreamStderr:
			err = writeOutput(stderr, p)
		case StreamExit:
			if len(p) != 4 {
				return -1, fmt.Errorf("exec: bad exit frame of %d bytes", len(p))
			}
			return int(int32(binary.BigEndian.Uint32(p))), nil
		case StreamError:
			return -1, errors.New(string(p))
		}
		if err != nil {
			return -1, err
		}
	}
}

func writeOutput(w io.Writer, p []byte) error {
	if w == nil {
		return nil
	}
	_, err := w.Write(p)
	return err
}
