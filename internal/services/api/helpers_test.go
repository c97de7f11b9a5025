package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/podhost/podhost/internal/services/kubeapi"
)

// fakeBackend is a healthy daemon without refused files.
type fakeBackend struct{}

func (fakeBackend) FileErrors() []FileError { return nil }
func (fakeBackend) Ready() bool             { return true }
func (fakeBackend) Runtime() RuntimeStatus  { return RuntimeStatus{Healthy: true} }

// kubeFake is a Kubernetes API backend with settable pods.
type kubeFake struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	changed chan struct{}
	warning string
}

func (k *kubeFake) Pods() []*corev1.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods
}

func (k *kubeFake) set(pods ...*corev1.Pod) {
	k.mu.Lock()
	k.pods = pods
	close(k.changed)
	k.changed = make(chan struct{})
	k.mu.Unlock()
}

func (k *kubeFake) Changed(ctx context.Context) <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.changed
}

func (k *kubeFake) PodsWarning() string             { return k.warning }
func (k *kubeFake) ConfigMaps() []*corev1.ConfigMap { return nil }
func (k *kubeFake) Secrets() []*corev1.Secret       { return nil }
func (k *kubeFake) Events() []*corev1.Event         { return nil }
func (k *kubeFake) Node(context.Context) (*corev1.Node, error) {
	return nil, errors.New("no node")
}
func (k *kubeFake) Logs(context.Context, *corev1.Pod, *corev1.PodLogOptions, io.Writer) error {
	return nil
}
func (k *kubeFake) PodMetrics(context.Context, string) ([]metricsv1beta1.PodMetrics, error) {
	return nil, nil
}
func (k *kubeFake) NodeMetrics(context.Context) (*metricsv1beta1.NodeMetrics, error) {
	return nil, errors.New("no node")
}

// withKube mounts the Kubernetes API over k on the server, as the daemon
// does, running it until the test ends.
func withKube(t *testing.T, k *kubeFake) func(*Server) {
	return func(s *Server) {
		if k.changed == nil {
			k.changed = make(chan struct{})
		}
		kube := kubeapi.New(k, nil, nil, kubeapi.Options{Logger: slog.New(slog.DiscardHandler)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { kube.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		s.Mount(kube.Handler(), "/api", "/api/", "/apis", "/apis/")
	}
}

// startServer serves b (with setup) on a fresh socket and returns a client
// once it answers.
func startServer(t *testing.T, b Backend, setup ...func(*Server)) *Client {
	t.Helper()
	c := NewClient(listen(t, b, DefaultLimits, setup...))
	deadline := time.Now().Add(10 * time.Second)
	for !answers(c) {
		if time.Now().After(deadline) {
			t.Fatal("API server did not come up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

func uidPod(uid string, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{}
	p.UID, p.Namespace, p.Name, p.Status.Phase = types.UID("uid-"+uid), "default", uid, phase
	return p
}

// answers: the server answers /healthz.
func answers(c *Client) bool {
	resp, err := c.get(context.Background(), "/healthz")
	if err == nil {
		resp.Body.Close()
	}
	return err == nil
}
