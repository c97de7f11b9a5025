package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/services/api"
)

// execBackend answers exec like a shell would for `sh -c 'exit N'`, and
// echoes stdin for cat.
type execBackend struct{ got chan api.ExecRequest }

func (execBackend) Pods() []*corev1.Pod                                             { return nil }
func (execBackend) Events(string, string) ([]api.Event, error)                      { return nil, nil }
func (execBackend) FileErrors() []api.FileError                                     { return nil }
func (execBackend) Ready() bool                                                     { return true }
func (execBackend) Runtime() api.RuntimeStatus                                      { return api.RuntimeStatus{Healthy: true} }
func (execBackend) Node(context.Context) (*corev1.Node, error)                      { return &corev1.Node{}, nil }
func (execBackend) Logs(context.Context, api.LogRequest, http.ResponseWriter) error { return nil }
func (b execBackend) Exec(_ context.Context, req api.ExecRequest, stdin io.Reader, stdout, _ io.Writer) (int, error) {
	b.got <- req
	if req.Name != "web" {
		return -1, api.NotFoundf("pods %q not found", req.Name) // the daemon's words (internal/daemon/backend.go)
	}
	if stdin != nil {
		_, err := io.Copy(stdout, stdin)
		return 0, err
	}
	var code int
	_, _ = fmt.Sscanf(req.Command[len(req.Command)-1], "exit %d", &code)
	return code, nil
}

func TestExec(t *testing.T) {
	e := newTestEnv(t)
	dir, err := os.MkdirTemp("", "ph-cmd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := execBackend{got: make(chan api.ExecRequest, 1)}
	go func() { _ = api.NewServer(b, slog.New(slog.DiscardHandler)).Listen(ctx, sock) }()
	for api.NewClient(sock).Ready(ctx) != nil {
		time.Sleep(5 * time.Millisecond)
	}
	for _, tc := range []struct {
		stdin          string
		args           []string
		code           int
		stdout, stderr string
		req            *api.ExecRequest
	}{
		{args: []string{"exec", "web", "--", "sh", "-c", "exit 3"}, code: 3, stderr: "command terminated with exit code 3\n",
			req: &api.ExecRequest{Namespace: "default", Name: "web", Command: []string{"sh", "-c", "exit 3"}}},
		// -t without -i: no TTY, as kubectl's SetupTTY
		{args: []string{"exec", "web", "-n", "ns", "-c", "side", "-t", "--", "sh", "-c", "exit 0"},
			req: &api.ExecRequest{Namespace: "ns", Name: "web", Container: "side", Command: []string{"sh", "-c", "exit 0"}}},
		// -it with stdin not a terminal: kubectl's warning, no TTY, the input passed
		{stdin: "piped", args: []string{"exec", "-it", "web", "--", "cat"}, stdout: "piped",
			stderr: "Unable to use a TTY - input is not a terminal or the right kind of file\n",
			req:    &api.ExecRequest{Namespace: "default", Name: "web", Stdin: true, Command: []string{"cat"}}},
		{stdin: "abc", args: []string{"exec", "-i", "web", "--", "cat"}, stdout: "abc"},
		{args: []string{"exec", "nope", "--", "true"}, code: 1, stderr: "Error from server (NotFound): pods \"nope\" not found\n"},
		{args: []string{"exec", "pod/nope", "--", "true"}, code: 1, stderr: "Error from server (NotFound): pods \"nope\" not found\n"},
		{args: []string{"exec", "web", "true"}, code: 1, stderr: "use exec NAME -- COMMAND"},
		{args: []string{"exec", "web", "x", "--", "true"}, code: 1, stderr: "exactly one pod NAME"},
		{args: []string{"exec", "web"}, code: 1, stderr: "Error: you must specify at least one command for the container\n"},
		{args: []string{"exec", "-n", "..", "web", "--", "true"}, code: 1,
			stderr: "Error: invalid namespace \"..\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')\n"},
	} {
		code, stdout, stderr := e.podhost(t, tc.stdin, append([]string{"--socket", sock}, tc.args...)...)
		if code != tc.code || stdout != tc.stdout || !strings.Contains(stderr, tc.stderr) || (tc.stderr == "" && stderr != "") {
			t.Errorf("podhost %v: code %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
		select {
		case got := <-b.got:
			if tc.req != nil && !reflect.DeepEqual(got, *tc.req) {
				t.Errorf("podhost %v: request %+v, want %+v", tc.args, got, *tc.req)
			}
		default:
		}
	}
}
