package kubeapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// lateBackend shows what lateStore wrote only when the test lets it (the
// daemon's source sees a written file a moment later).
type lateBackend struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	changed chan struct{}
}

func (b *lateBackend) Pods() []*corev1.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pods
}
func (b *lateBackend) ConfigMaps() []*corev1.ConfigMap { return nil }
func (b *lateBackend) Secrets() []*corev1.Secret       { return nil }
func (b *lateBackend) Events() []*corev1.Event         { return nil }
func (b *lateBackend) Node(context.Context) (*corev1.Node, error) {
	return &corev1.Node{}, nil
}
func (b *lateBackend) Changed(ctx context.Context) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}
func (b *lateBackend) Logs(context.Context, *corev1.Pod, *corev1.PodLogOptions, io.Writer) error {
	return nil
}
func (b *lateBackend) PodMetrics(context.Context, string) ([]metricsv1beta1.PodMetrics, error) {
	return nil, nil
}
func (b *lateBackend) NodeMetrics(context.Context) (*metricsv1beta1.NodeMetrics, error) {
	return nil, nil
}

// show makes p visible and signals the change.
func (b *lateBackend) show(p *corev1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pods = append(b.pods, p)
	close(b.changed)
	b.changed = make(chan struct{})
}

type lateStore struct{ written chan *corev1.Pod }

func (s lateStore) Stored(schema.GroupResource, string, string) ([]byte, error) { return nil, nil }
func (s lateStore) Put(_ context.Context, _ schema.GroupResource, _, _ string, doc []byte, _, _ bool) (runtime.Object, bool, error) {
	var p corev1.Pod
	if err := json.Unmarshal(doc, &p); err != nil {
		return nil, false, err
	}
	s.written <- &p
	return &p, true, nil
}
func (s lateStore) Delete(context.Context, schema.GroupResource, string, string, *int64, bool) error {
	return nil
}

// A create answers once the daemon shows the pod, with the object as shown:
// a read right after the write finds it (kubectl apply && kubectl wait).
func TestCreateAnswersOnceShown(t *testing.T) {
	b := &lateBackend{changed: make(chan struct{})}
	st := lateStore{written: make(chan *corev1.Pod, 1)}
	srv := httptest.NewServer(New(b, st, nil, Options{}).Handler())
	defer srv.Close()
	go func() {
		p := <-st.written
		p.UID = types.UID("shown-uid")
		b.show(p)
	}()
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"default"},"spec":{"containers":[{"name":"c","image":"i"}]}}`
	resp, err := http.Post(srv.URL+"/api/v1/namespaces/default/pods", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got corev1.Pod
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	if got.UID != "shown-uid" || got.ResourceVersion == "" {
		t.Fatalf("create answered with uid %q rv %q, want the object as the daemon shows it", got.UID, got.ResourceVersion)
	}
	get, err := http.Get(srv.URL + "/api/v1/namespaces/default/pods/x")
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("get right after the create: %d", get.StatusCode)
	}
}
