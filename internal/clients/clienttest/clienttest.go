// Package clienttest is test support for the command packages: the real
// API servers (internal/services/api's /v1 and the Kubernetes API of
// internal/services/kubeapi, with its stream server) on a fresh socket over
// a fake daemon. Tests only.
package clienttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
	"github.com/podhost/podhost/internal/services/kubeapi"
	"github.com/podhost/podhost/internal/services/kubeapi/stream"
)

// Daemon is what Serve serves: /v1, the Kubernetes API and its streams.
type Daemon interface {
	api.Backend
	kubeapi.Backend
	stream.Runtime
}

// FakeDaemon is a daemon with fixed pods, events, usage, file errors,
// runtime status and node; it has no logs and its exec runs nothing
// (exit 0). Tests embed it to answer more; Touch signals a change (the
// Kubernetes API's watches then look again).
type FakeDaemon struct {
	PodList       []*corev1.Pod
	EventList     []*corev1.Event
	Usage         []metricsv1beta1.PodMetrics
	FileErrs      []api.FileError
	RuntimeStatus api.RuntimeStatus
	NodeObject    *corev1.Node // nil: the node list is empty

	mu      sync.Mutex
	changed chan struct{}
}

func (f *FakeDaemon) Pods() []*corev1.Pod             { return f.PodList }
func (f *FakeDaemon) ConfigMaps() []*corev1.ConfigMap { return nil }
func (f *FakeDaemon) Secrets() []*corev1.Secret       { return nil }
func (f *FakeDaemon) Events() []*corev1.Event         { return f.EventList }
func (f *FakeDaemon) FileErrors() []api.FileError     { return f.FileErrs }
func (f *FakeDaemon) Ready() bool                     { return true }
func (f *FakeDaemon) Runtime() api.RuntimeStatus      { return f.RuntimeStatus }
func (f *FakeDaemon) PodsWarning() string             { return f.RuntimeStatus.Warning() }
func (f *FakeDaemon) Node(context.Context) (*corev1.Node, error) {
	if f.NodeObject == nil {
		return nil, errors.New("no node")
	}
	return f.NodeObject, nil
}

// Changed is closed at the next Touch.
func (f *FakeDaemon) Changed(context.Context) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

// Touch tells the Kubernetes API that something changed.
func (f *FakeDaemon) Touch() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed != nil {
		close(f.changed)
	}
	f.changed = make(chan struct{})
}

func (f *FakeDaemon) Logs(context.Context, *corev1.Pod, *corev1.PodLogOptions, io.Writer) error {
	return nil
}

func (f *FakeDaemon) PodMetrics(_ context.Context, namespace string) ([]metricsv1beta1.PodMetrics, error) {
	var out []metricsv1beta1.PodMetrics
	for _, pm := range f.Usage {
		if namespace == "" || pm.Namespace == namespace {
			out = append(out, pm)
		}
	}
	return out, nil
}

func (f *FakeDaemon) NodeMetrics(context.Context) (*metricsv1beta1.NodeMetrics, error) {
	return nil, errors.New("no node metrics")
}

func (f *FakeDaemon) Exec(context.Context, *corev1.Pod, string, []string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan stream.TerminalSize) (int, error) {
	return 0, nil
}

func (f *FakeDaemon) Attach(context.Context, *corev1.Pod, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan stream.TerminalSize) error {
	return nil
}

func (f *FakeDaemon) PortForward(context.Context, *corev1.Pod, int32, io.ReadWriteCloser) error {
	return errors.New("no port-forward")
}

// Serve runs the real API servers over d on a fresh socket until the test
// ends and returns the socket's path once they answer.
func Serve(t *testing.T, d Daemon) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ph-cli-") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "api.sock")
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.DiscardHandler)
	srv := api.NewServer(d, log)
	streams := stream.New(d, log, stream.Options{})
	kube := kubeapi.New(d, nil, streams, kubeapi.Options{Logger: log})
	srv.Mount(kube.Handler(), "/api", "/api/", "/apis", "/apis/")
	kubeDone := make(chan struct{})
	go func() { kube.Run(ctx); close(kubeDone) }()
	done := make(chan error, 1)
	go func() { done <- srv.Listen(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("api server: %v", err)
		}
		<-kubeDone
		_ = streams.Close()
		_ = os.RemoveAll(dir)
	})
	deadline := time.Now().Add(10 * time.Second)
	for api.NewClient(sock).Ready(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("API server did not come up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return sock
}

// PodEvent is a kubelet event about pod, as the daemon's Kubernetes API
// lists it.
func PodEvent(pod *corev1.Pod, last, first time.Time, count int32, typ, reason, message string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: pod.Namespace, Name: fmt.Sprintf("%s.%x", pod.Name, first.UnixNano())},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last), Count: count,
		Type: typ, Reason: reason, Message: message,
	}
}

// WebPod is a Running pod default/web with one container, "c".
func WebPod() *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.Name = "default", "web"
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "img"}}
	p.Status.Phase = corev1.PodRunning
	return p
}

// RunningWebPod is WebPod with its container running, as exec needs it.
func RunningWebPod() *corev1.Pod {
	p := WebPod()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
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
