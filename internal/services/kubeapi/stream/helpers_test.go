package stream

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	restclient "k8s.io/client-go/rest"

	"github.com/podhost/podhost/internal/services/kubeapi/stream/streamtest"
)

const wait = streamtest.Wait

// fakeRuntime is the Runtime the handlers drive; each test sets the
// functions it needs.
type fakeRuntime struct {
	exec    func(ctx context.Context, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) (int, error)
	attach  func(ctx context.Context, container string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) error
	forward func(ctx context.Context, port int32, stream io.ReadWriteCloser) error
}

func (f *fakeRuntime) Exec(ctx context.Context, _ *corev1.Pod, container string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) (int, error) {
	return f.exec(ctx, container, cmd, stdin, stdout, stderr, tty, resize)
}

func (f *fakeRuntime) Attach(ctx context.Context, _ *corev1.Pod, container string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan TerminalSize) error {
	return f.attach(ctx, container, stdin, stdout, stderr, tty, resize)
}

func (f *fakeRuntime) PortForward(ctx context.Context, _ *corev1.Pod, port int32, stream io.ReadWriteCloser) error {
	return f.forward(ctx, port, stream)
}

func testPod() *corev1.Pod {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}, {Name: "done"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "c", State: running},
			{Name: "done", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
		}},
	}
}

// api serves the three subresources as the API server will, over an
// httptest server, and returns the client config and the pod's URL.
func api(t *testing.T, rt Runtime, opts Options) (*Server, *restclient.Config, string) {
	t.Helper()
	lw := &testWriter{t: t}
	s := New(rt, slog.New(slog.NewTextHandler(lw, &slog.HandlerOptions{Level: slog.LevelDebug})), opts)
	mux := streamtest.Mux(s, func(string, string) (*corev1.Pod, error) { return testPod(), nil })
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		ts.Close()
		lw.stop()
	})
	return s, &restclient.Config{Host: ts.URL}, ts.URL + "/api/v1/namespaces/default/pods/web/"
}

// lockedBuffer is a concurrency-safe strings.Builder.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testWriter logs to the test until stop (later writes are dropped).
type testWriter struct {
	mu      sync.Mutex
	t       *testing.T
	stopped bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
}
