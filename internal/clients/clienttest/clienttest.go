// Package clienttest is test support for the command packages: the real
// API server (internal/services/api) on a fresh socket over a fake
// backend. Tests only.
package clienttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// FakeDaemon is an API backend with fixed pods, file errors, runtime
// status and node; it has no logs and runs no exec. Tests embed it to
// answer more.
type FakeDaemon struct {
	PodList       []*corev1.Pod
	FileErrs      []api.FileError
	RuntimeStatus api.RuntimeStatus
	NodeObject    *corev1.Node // nil: GET /v1/node fails
}

func (f *FakeDaemon) Pods() []*corev1.Pod                        { return f.PodList }
func (f *FakeDaemon) Events(string, string) ([]api.Event, error) { return nil, nil }
func (f *FakeDaemon) FileErrors() []api.FileError                { return f.FileErrs }
func (f *FakeDaemon) Ready() bool                                { return true }
func (f *FakeDaemon) Runtime() api.RuntimeStatus                 { return f.RuntimeStatus }
func (f *FakeDaemon) Node(context.Context) (*corev1.Node, error) {
	if f.NodeObject == nil {
		return nil, errors.New("no node")
	}
	return f.NodeObject, nil
}
func (f *FakeDaemon) Logs(context.Context, api.LogRequest, http.ResponseWriter) error {
	return nil
}
func (f *FakeDaemon) Exec(context.Context, api.ExecRequest, io.Reader, io.Writer, io.Writer) (int, error) {
	return 0, nil
}

// Serve runs the real API server over b on a fresh socket until the test
// ends and returns the socket's path once the server answers; setup, if
// any, configures the server first (EnableObserve).
func Serve(t *testing.T, b api.Backend, setup ...func(*api.Server)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ph-cli-") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := api.NewServer(b, slog.New(slog.DiscardHandler))
	for _, f := range setup {
		f(srv)
	}
	go func() { done <- srv.Listen(ctx, sock) }()
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

// WebPod is a Running pod default/web with one container, "c".
func WebPod() *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.Name = "default", "web"
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "img"}}
	p.Status.Phase = corev1.PodRunning
	return p
}

// NotFoundNames is the names of err's NotFoundErrors (errors.Join's parts),
// "" for an error of another kind.
func NotFoundNames(err error) []string {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	var names []string
	for _, e := range errs {
		nf, ok := e.(*cmdutil.NotFoundError)
		if !ok {
			names = append(names, "")
			continue
		}
		names = append(names, nf.Resource+"/"+nf.Name)
	}
	return names
}

// SortPod is WebPod named name with what sort tests sort by: a start time
// (none when zero), a restart count (negative: no container status) and
// labels.
func SortPod(name string, started time.Time, restarts int32, labels map[string]string) corev1.Pod {
	p := *WebPod()
	p.Name, p.Labels = name, labels
	if !started.IsZero() {
		p.Status.StartTime = &metav1.Time{Time: started}
		p.CreationTimestamp = metav1.NewTime(started)
	}
	if restarts >= 0 {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: restarts, Ready: true}}
	}
	return p
}

// PodNames are the pods' names, in order.
func PodNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

// OpenPTY returns a pseudo-terminal's master and slave, of size cols×rows
// (skips the test where there is none); both are closed when it ends.
func OpenPTY(t testing.TB, cols, rows uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	SetPTYSize(t, m, cols, rows)
	return m, s
}

// SetPTYSize sets the terminal's size (the kernel signals SIGWINCH to its
// foreground process group).
func SetPTYSize(t testing.TB, f *os.File, cols, rows uint16) {
	t.Helper()
	if err := unix.IoctlSetWinsize(int(f.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatal(err)
	}
}
