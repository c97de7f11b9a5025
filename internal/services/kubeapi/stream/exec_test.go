package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"
	clientexec "k8s.io/client-go/util/exec"

	"github.com/podhost/podhost/internal/services/kubeapi/stream/streamtest"
)

// upperExec echoes stdin upper-cased on stdout, says "warn" on stderr and
// exits with the code its command names ("exit", "N").
func upperExec(t *testing.T) func(context.Context, string, []string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan TerminalSize) (int, error) {
	return func(_ context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, _ <-chan TerminalSize) (int, error) {
		if container != "c" || tty || stdin == nil || stdout == nil || stderr == nil {
			return -1, fmt.Errorf("unexpected exec: container %q tty %v stdin %v stdout %v stderr %v", container, tty, stdin != nil, stdout != nil, stderr != nil)
		}
		in, err := io.ReadAll(stdin)
		if err != nil {
			return -1, err
		}
		if _, err := io.WriteString(stdout, strings.ToUpper(string(in))); err != nil {
			return -1, err
		}
		if _, err := io.WriteString(stderr, "warn\n"); err != nil {
			return -1, err
		}
		return strconv.Atoi(cmd[1])
	}
}

// TestExec: stdin to the command (ended by the client's close), stdout and
// stderr apart, the exit code as kubectl reads it, over both protocols.
func TestExec(t *testing.T) {
	for _, ex := range streamtest.Executors {
		t.Run(ex.Name, func(t *testing.T) {
			_, cfg, pod := api(t, &fakeRuntime{exec: upperExec(t)}, Options{})
			for _, code := range []int{0, 3} {
				e, err := ex.New(cfg, streamtest.URL(t, pod, "exec", "c", true, false, "exit", strconv.Itoa(code)))
				if err != nil {
					t.Fatal(err)
				}
				var out, errb lockedBuffer
				err = e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errb})
				var ce clientexec.CodeExitError
				switch {
				case code == 0 && err != nil:
					t.Fatalf("exit 0: %v", err)
				case code != 0 && (!errors.As(err, &ce) || ce.ExitStatus() != code):
					t.Fatalf("exit %d: got %v (%T), want a CodeExitError with code %d", code, err, err, code)
				}
				if out.String() != "HELLO\n" || errb.String() != "warn\n" {
					t.Errorf("exit %d: stdout %q stderr %q, want %q and %q", code, out.String(), errb.String(), "HELLO\n", "warn\n")
				}
			}
		})
	}
}

// TestExecTTYResize: with -t the command gets a TTY, no stderr, and the
// client's terminal sizes in order.
func TestExecTTYResize(t *testing.T) {
	want := []TerminalSize{{Width: 100, Height: 30}, {Width: 120, Height: 40}}
	rt := &fakeRuntime{exec: func(ctx context.Context, _ string, _ []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) (int, error) {
		if !tty || stderr != nil || resize == nil {
			return -1, fmt.Errorf("tty %v stderr %v resize %v", tty, stderr != nil, resize != nil)
		}
		for range want {
			select {
			case sz := <-resize:
				fmt.Fprintf(stdout, "%dx%d ", sz.Width, sz.Height)
			case <-ctx.Done():
				return -1, ctx.Err()
			}
		}
		return 0, nil
	}}
	for _, ex := range streamtest.Executors {
		t.Run(ex.Name, func(t *testing.T) {
			_, cfg, pod := api(t, rt, Options{})
			e, err := ex.New(cfg, streamtest.URL(t, pod, "exec", "c", true, true, "sh"))
			if err != nil {
				t.Fatal(err)
			}
			q := streamtest.NewSizeQueue(remotecommand.TerminalSize{Width: 100, Height: 30}, remotecommand.TerminalSize{Width: 120, Height: 40})
			defer close(q.Done)
			var out lockedBuffer
			stdin, stdinW := io.Pipe() // a terminal's stdin stays open
			defer stdinW.Close()
			err = e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: true, TerminalSizeQueue: q})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != "100x30 120x40 " {
				t.Errorf("sizes delivered: %q, want %q", got, "100x30 120x40 ")
			}
		})
	}
}

// TestExecErrors: what kubectl shows for a container that is not running
// (the kubelet's words), and the API's refusals before any upgrade.
func TestExecErrors(t *testing.T) {
	rt := &fakeRuntime{exec: func(context.Context, string, []string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan TerminalSize) (int, error) {
		return -1, errors.New("must not run")
	}}
	for _, ex := range streamtest.Executors {
		t.Run(ex.Name, func(t *testing.T) {
			_, cfg, pod := api(t, rt, Options{})
			for _, tc := range []struct {
				container string
				cmd       []string
				want      string
			}{
				{"done", []string{"true"}, `container not found ("done")`},
				{"c", nil, "you must specify at least one command for the container"},
				{"", []string{"true"}, "a container name must be specified for pod web"},
			} {
				e, err := ex.New(cfg, streamtest.URL(t, pod, "exec", tc.container, false, false, tc.cmd...))
				if err != nil {
					t.Fatal(err)
				}
				err = e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("container %q command %q: got %v, want an error with %q", tc.container, tc.cmd, err, tc.want)
				}
			}
		})
	}
}

// TestNoStreams: an exec asking for no stream is refused with a Status,
// as the kubelet refuses it, before any upgrade.
func TestNoStreams(t *testing.T) {
	_, _, pod := api(t, &fakeRuntime{}, Options{})
	resp, err := http.Get(pod + "exec?container=c&command=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || st.Kind != "Status" || st.Reason != metav1.StatusReasonBadRequest ||
		st.Message != "you must specify at least 1 of stdin, stdout, stderr" {
		t.Errorf("got %d %+v", resp.StatusCode, st)
	}
}

// TestAttach: the container's output on stdout and stderr apart, stdin
// handed on, the TTY the container's (none), over both protocols; a
// container that is not running gets the kubelet's error.
func TestAttach(t *testing.T) {
	rt := &fakeRuntime{attach: func(_ context.Context, container string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) error {
		if container != "c" || tty || resize != nil || stdin == nil {
			return fmt.Errorf("container %q tty %v resize %v stdin %v", container, tty, resize != nil, stdin != nil)
		}
		in, err := io.ReadAll(stdin)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "out %s", in)
		fmt.Fprint(stderr, "err\n")
		return nil
	}}
	for _, ex := range streamtest.Executors {
		t.Run(ex.Name, func(t *testing.T) {
			_, cfg, pod := api(t, rt, Options{})
			e, err := ex.New(cfg, streamtest.URL(t, pod, "attach", "c", true, false))
			if err != nil {
				t.Fatal(err)
			}
			var out, errb lockedBuffer
			if err := e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdin: strings.NewReader("x\n"), Stdout: &out, Stderr: &errb}); err != nil {
				t.Fatal(err)
			}
			if out.String() != "out x\n" || errb.String() != "err\n" {
				t.Errorf("stdout %q stderr %q", out.String(), errb.String())
			}
			e, err = ex.New(cfg, streamtest.URL(t, pod, "attach", "done", false, false))
			if err != nil {
				t.Fatal(err)
			}
			err = e.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
			if want := "container done not found in pod web_default"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("attach to a stopped container: %v, want %q", err, want)
			}
		})
	}
}
