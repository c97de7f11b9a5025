package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/services/api"
)

// fakeDaemon is an API backend with fixed pods, file errors, runtime and
// node.
type fakeDaemon struct {
	pods    []*corev1.Pod
	errs    []api.FileError
	runtime api.RuntimeStatus
	node    *corev1.Node
}

func (f *fakeDaemon) Pods() []*corev1.Pod                        { return f.pods }
func (f *fakeDaemon) Events(string, string) ([]api.Event, error) { return nil, nil }
func (f *fakeDaemon) FileErrors() []api.FileError                { return f.errs }
func (f *fakeDaemon) Ready() bool                                { return true }
func (f *fakeDaemon) Runtime() api.RuntimeStatus                 { return f.runtime }
func (f *fakeDaemon) Node(context.Context) (*corev1.Node, error) {
	if f.node == nil {
		return nil, errors.New("no node")
	}
	return f.node, nil
}
func (f *fakeDaemon) Logs(context.Context, api.LogRequest, http.ResponseWriter) error {
	return nil
}
func (f *fakeDaemon) Exec(context.Context, api.ExecRequest, io.Reader, io.Writer, io.Writer) (int, error) {
	return 0, nil
}

// serve runs the real API server over b on a fresh socket and returns it.
func serve(t *testing.T, b api.Backend) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ph-cli-") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- api.NewServer(b, slog.New(slog.DiscardHandler)).Listen(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("api server: %v", err)
		}
		_ = os.RemoveAll(dir)
	})
	deadline := time.Now().Add(5 * time.Second)
	for api.NewClient(sock).Ready(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("API server did not come up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return sock
}

func webPod() *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.Name = "default", "web"
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "img"}}
	p.Status.Phase = corev1.PodRunning
	return p
}

func TestGetPrintsWarningsOnStderr(t *testing.T) {
	since := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	d := &fakeDaemon{pods: []*corev1.Pod{webPod()}, runtime: api.RuntimeStatus{Healthy: true}, errs: []api.FileError{
		{File: "/m/fifo.yaml", Error: "fifo.yaml: not a regular file"},
		{File: "/m/open.yaml", Error: "open.yaml: insecure permissions: mode 0666 is group- or world-writable"},
	}}
	sock := serve(t, d)
	d.runtime = api.RuntimeStatus{Address: "/run/c.sock", Since: since, Error: "connection refused", LastConfirmed: since.Add(-time.Second)}
	for _, output := range []string{"", "json"} {
		var out, errOut bytes.Buffer
		if err := Get(context.Background(), GetOptions{Socket: sock, Output: output}, IOStreams{Out: &out, ErrOut: &errOut}); err != nil {
			t.Fatal(err)
		}
		wantErr := "Warning: fifo.yaml: not a regular file\n" +
			"Warning: open.yaml: insecure permissions: mode 0666 is group- or world-writable\n" +
			"Warning: containerd at /run/c.sock is unreachable since 2026-11-23T10:00:00Z: connection refused; statuses may be stale\n"
		if errOut.String() != wantErr {
			t.Errorf("-o %q stderr:\n%s\nwant\n%s", output, errOut.String(), wantErr)
		}
		switch output {
		case "":
			if !strings.HasPrefix(out.String(), "NAME") || !strings.Contains(out.String(), "web") || strings.Contains(out.String(), "Warning") {
				t.Errorf("table:\n%s", out.String())
			}
		case "json":
			var l corev1.PodList
			if err := json.Unmarshal(out.Bytes(), &l); err != nil || len(l.Items) != 1 {
				t.Errorf("json stdout: %v\n%s", err, out.String())
			}
		}
	}
}

func TestDescribeShowsLastConfirmed(t *testing.T) {
	confirmed := time.Now().Add(-3 * time.Minute).Truncate(time.Second)
	d := &fakeDaemon{pods: []*corev1.Pod{webPod()}, runtime: api.RuntimeStatus{Healthy: true, LastConfirmed: confirmed}}
	sock := serve(t, d)
	var out, errOut bytes.Buffer
	if err := Describe(context.Background(), GetOptions{Socket: sock, Namespace: "default", Names: []string{"web"}}, IOStreams{Out: &out, ErrOut: &errOut}); err != nil {
		t.Fatal(err)
	}
	want := "Last confirmed: " + confirmed.Format(time.RFC1123Z) + " (3m"
	if !strings.Contains(out.String(), want) || errOut.Len() != 0 {
		t.Fatalf("describe lacks %q (stderr %q):\n%s", want, errOut.String(), out.String())
	}
}

func TestInvalidNamesRejectedBeforeTheDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock") // no daemon: validation comes first
	ctx := context.Background()
	s := IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	for _, tt := range []struct{ ns, name, want string }{
		{"..", "web", `invalid namespace "..": a lowercase RFC 1123 label must consist of`},
		{"default", "..", `invalid pod name "..": a lowercase RFC 1123 subdomain must consist of`},
		{"a/b", "web", `invalid namespace "a/b"`},
		{"default", "Web", `invalid pod name "Web"`},
	} {
		errs := map[string]error{
			"get":      Get(ctx, GetOptions{Socket: sock, Namespace: tt.ns, Names: []string{tt.name}}, s),
			"describe": Describe(ctx, GetOptions{Socket: sock, Namespace: tt.ns, Names: []string{tt.name}}, s),
			"logs":     Logs(ctx, LogsOptions{Socket: sock, Namespace: tt.ns, Name: tt.name}, s),
			"delete":   Delete(ctx, DeleteOptions{ManifestDir: t.TempDir(), Namespace: tt.ns, Names: []string{tt.name}}, s),
		}
		_, errs["exec"] = Exec(ctx, ExecOptions{Socket: sock, Namespace: tt.ns, Name: tt.name, Command: []string{"true"}}, s)
		for cmd, err := range errs {
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s -n %s %s: %v, want one line %q…", cmd, tt.ns, tt.name, err, tt.want)
			}
		}
	}
}
