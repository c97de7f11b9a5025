package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	frames := []struct {
		stream byte
		data   []byte
	}{
		{StreamStdout, []byte("hello")},
		{StreamStdin, nil},
		{StreamStderr, bytes.Repeat([]byte("x"), 70000)},
		{StreamExit, exitPayload(-2)},
	}
	for _, f := range frames {
		if err := writeFrame(&buf, f.stream, f.data); err != nil {
			t.Fatal(err)
		}
	}
	if want := 5*len(frames) + 5 + 70000 + 4; buf.Len() != want {
		t.Fatalf("encoded %d bytes, want %d", buf.Len(), want)
	}
	if got := buf.Bytes()[:5]; !bytes.Equal(got, []byte{1, 0, 0, 0, 5}) {
		t.Fatalf("header = %v", got)
	}
	for i, f := range frames {
		stream, data, err := readFrame(&buf)
		if err != nil || stream != f.stream || !bytes.Equal(data, f.data) {
			t.Fatalf("frame %d: stream %d, %d bytes, err %v; want stream %d, %d bytes", i, stream, len(data), err, f.stream, len(f.data))
		}
	}
	if _, _, err := readFrame(&buf); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v, want EOF", err)
	}
}

func TestFrameErrors(t *testing.T) {
	for name, in := range map[string][]byte{
		"short header":  {1, 0, 0},
		"short payload": {1, 0, 0, 0, 9, 'a', 'b'},
	} {
		if _, _, err := readFrame(bytes.NewReader(in)); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: %v, want ErrUnexpectedEOF", name, err)
		}
	}
	if _, _, err := readFrame(bytes.NewReader([]byte{1, 0, 0x10, 0, 1})); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized frame: %v", err)
	}
}

func TestExecQuery(t *testing.T) {
	got := ExecQuery(ExecRequest{Namespace: "kube system", Name: "web", Container: "c", Command: []string{"sh", "-c", "echo a&b"}, TTY: true})
	want := "/v1/pods/kube%20system/web/exec?command=sh&command=-c&command=echo+a%26b&container=c&stdin=false&tty=true"
	if got != want {
		t.Fatalf("ExecQuery = %s\nwant %s", got, want)
	}
}

// fakeBackend serves exec with fn; the rest is empty.
type fakeBackend struct {
	exec      func(ctx context.Context, req ExecRequest, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	eventsErr error // default ErrNotFound
}

func (fakeBackend) Pods() []*corev1.Pod { return nil }
func (f fakeBackend) Events(string, string) ([]Event, error) {
	if f.eventsErr != nil {
		return nil, f.eventsErr
	}
	return nil, ErrNotFound
}
func (fakeBackend) FileErrors() []FileError                                     { return nil }
func (fakeBackend) Ready() bool                                                 { return true }
func (fakeBackend) Runtime() RuntimeStatus                                      { return RuntimeStatus{Healthy: true} }
func (fakeBackend) Node(context.Context) (*corev1.Node, error)                  { return &corev1.Node{}, nil }
func (fakeBackend) Logs(context.Context, LogRequest, http.ResponseWriter) error { return nil }
func (f fakeBackend) Exec(ctx context.Context, req ExecRequest, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return f.exec(ctx, req, stdin, stdout, stderr)
}

// startServer serves b on a fresh unix socket and returns a client for it.
func startServer(t *testing.T, b Backend, setup ...func(*Server)) *Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "ph-api-") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sock := filepath.Join(dir, "api.sock")
	srv := NewServer(b, slog.New(slog.DiscardHandler))
	for _, f := range setup {
		f(srv)
	}
	go func() { done <- srv.Listen(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen: %v", err)
		}
		os.RemoveAll(dir)
	})
	c := NewClient(sock)
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := c.get(ctx, "/healthz") // the server answers (ready or not)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server did not come up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

func TestExecOutputAndExitCode(t *testing.T) {
	big := strings.Repeat("0123456789", 20000) // several frames
	var got ExecRequest
	c := startServer(t, fakeBackend{exec: func(_ context.Context, req ExecRequest, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
		got = req
		if stdin != nil {
			return -1, errors.New("stdin without -i")
		}
		fmt.Fprint(stdout, "out1 ")
		fmt.Fprint(stderr, "err1")
		fmt.Fprint(stdout, big)
		return 3, nil
	}})
	req := ExecRequest{Namespace: "default", Name: "web", Container: "main", Command: []string{"sh", "-c", "exit 3"}}
	var stdout, stderr bytes.Buffer
	code, err := c.Exec(context.Background(), req, strings.NewReader("ignored"), &stdout, &stderr)
	if err != nil || code != 3 {
		t.Fatalf("Exec = %d, %v; want 3", code, err)
	}
	if !reflect.DeepEqual(got, req) {
		t.Fatalf("backend got %+v, want %+v", got, req)
	}
	if stdout.String() != "out1 "+big || stderr.String() != "err1" {
		t.Fatalf("stdout %d bytes, stderr %q", stdout.Len(), stderr.String())
	}
}

func TestExecStdin(t *testing.T) {
	c := startServer(t, fakeBackend{exec: func(_ context.Context, req ExecRequest, stdin io.Reader, stdout, _ io.Writer) (int, error) {
		if !req.Stdin || !req.TTY {
			return -1, fmt.Errorf("flags: %+v", req)
		}
		_, err := io.Copy(stdout, stdin) // like cat: until stdin's EOF
		return 0, err
	}})
	in := strings.Repeat("abc", 100000)
	var stdout bytes.Buffer
	req := ExecRequest{Namespace: "default", Name: "web", Command: []string{"cat"}, Stdin: true, TTY: true}
	code, err := c.Exec(context.Background(), req, strings.NewReader(in), &stdout, io.Discard)
	if err != nil || code != 0 || stdout.String() != in {
		t.Fatalf("Exec = %d, %v; echoed %d of %d bytes", code, err, stdout.Len(), len(in))
	}
	// -i with no reader: an empty stdin.
	stdout.Reset()
	if code, err := c.Exec(context.Background(), req, nil, &stdout, io.Discard); err != nil || code != 0 || stdout.Len() != 0 {
		t.Fatalf("nil stdin: %d, %v, %q", code, err, stdout.String())
	}
}

// A command that ignores its stdin finishes even though the client still
// has input to send.
func TestExecStdinIgnored(t *testing.T) {
	c := startServer(t, fakeBackend{exec: func(_ context.Context, _ ExecRequest, stdin io.Reader, stdout, _ io.Writer) (int, error) {
		_, _ = stdin.Read(make([]byte, 1)) // starts reading (as the runtime does), then stops
		fmt.Fprint(stdout, "done")
		return 0, nil
	}})
	pr, pw := io.Pipe() // never ends
	defer pw.Close()
	go func() { _, _ = pw.Write(make([]byte, 1<<20)) }()
	var stdout bytes.Buffer
	req := ExecRequest{Namespace: "default", Name: "web", Command: []string{"true"}, Stdin: true}
	if code, err := c.Exec(context.Background(), req, pr, &stdout, io.Discard); err != nil || code != 0 || stdout.String() != "done" {
		t.Fatalf("Exec = %d, %v, %q", code, err, stdout.String())
	}
}

func TestExecErrorsBeforeStart(t *testing.T) {
	errs := map[string]error{
		"gone":    fmt.Errorf("pods %q: %w", "gone", ErrNotFound),
		"stopped": Conflictf("container main is not running (state: terminated: Completed, exit code 0)"),
		"two":     errors.New("a container name must be specified for pod two, choose one of: [a b]"),
	}
	c := startServer(t, fakeBackend{exec: func(_ context.Context, req ExecRequest, _ io.Reader, _, _ io.Writer) (int, error) {
		return -1, errs[req.Name]
	}})
	for name, want := range errs {
		for _, stdin := range []bool{false, true} {
			req := ExecRequest{Namespace: "default", Name: name, Command: []string{"true"}, Stdin: stdin}
			_, err := c.Exec(context.Background(), req, strings.NewReader("x"), io.Discard, io.Discard)
			if err == nil || err.Error() != want.Error() {
				t.Fatalf("%s: error %v, want %v", name, err, want)
			}
			for _, sentinel := range []error{ErrNotFound, ErrConflict} {
				if errors.Is(err, sentinel) != errors.Is(want, sentinel) {
					t.Fatalf("%s: errors.Is(%v, %v) = %v", name, err, sentinel, !errors.Is(want, sentinel))
				}
			}
		}
	}
	_, err := c.Exec(context.Background(), ExecRequest{Namespace: "default", Name: "web"}, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "at least one command") {
		t.Fatalf("no command: %v", err)
	}
}

func TestExecErrorAfterStart(t *testing.T) {
	c := startServer(t, fakeBackend{exec: func(_ context.Context, _ ExecRequest, _ io.Reader, stdout, _ io.Writer) (int, error) {
		fmt.Fprint(stdout, "partial")
		return -1, errors.New("exec: wait: shim died")
	}})
	var stdout bytes.Buffer
	_, err := c.Exec(context.Background(), ExecRequest{Namespace: "default", Name: "web", Command: []string{"x"}}, nil, &stdout, io.Discard)
	if err == nil || err.Error() != "exec: wait: shim died" || stdout.String() != "partial" {
		t.Fatalf("Exec: %v, stdout %q", err, stdout.String())
	}
}

// Cancelling the client's ctx (^C) closes the connection, which cancels the
// backend's ctx, before and after the upgrade.
func TestExecCancel(t *testing.T) {
	for _, output := range []bool{false, true} {
		t.Run(fmt.Sprintf("output=%v", output), func(t *testing.T) {
			started, cancelled := make(chan struct{}), make(chan struct{})
			var once sync.Once
			c := startServer(t, fakeBackend{exec: func(ctx context.Context, _ ExecRequest, _ io.Reader, stdout, _ io.Writer) (int, error) {
				if output {
					fmt.Fprint(stdout, "running\n")
				}
				once.Do(func() { close(started) })
				<-ctx.Done()
				close(cancelled)
				return -1, ctx.Err()
			}})
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := c.Exec(ctx, ExecRequest{Namespace: "default", Name: "web", Command: []string{"sleep"}}, nil, io.Discard, io.Discard)
				errc <- err
			}()
			<-started
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Fatalf("Exec after cancel: %v", err)
			}
			select {
			case <-cancelled:
			case <-time.After(5 * time.Second):
				t.Fatal("backend's ctx not cancelled after the client went away")
			}
		})
	}
}

func TestExecDaemonDown(t *testing.T) {
	c := NewClient(filepath.Join(t.TempDir(), "none.sock"))
	_, err := c.Exec(context.Background(), ExecRequest{Namespace: "default", Name: "web", Command: []string{"x"}}, nil, io.Discard, io.Discard)
	if !errors.Is(err, ErrDaemonDown) {
		t.Fatalf("Exec: %v, want ErrDaemonDown", err)
	}
}

// A 404's message reaches the client as the daemon wrote it (kubectl's
// words, nothing appended), still matching ErrNotFound.
func TestNotFoundMessageVerbatim(t *testing.T) {
	want := `pods "gone" not found`
	c := startServer(t, fakeBackend{eventsErr: NotFoundf("pods %q not found", "gone")})
	_, err := c.Events(context.Background(), "default", "gone")
	if err == nil || err.Error() != want || !errors.Is(err, ErrNotFound) {
		t.Fatalf("Events: %v (ErrNotFound: %v), want %q", err, errors.Is(err, ErrNotFound), want)
	}
}
