package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func uidPod(uid string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid}, Status: corev1.PodStatus{Phase: phase}}
}

func TestDiffPods(t *testing.T) {
	prev, evs := DiffPods(nil, []*corev1.Pod{uidPod("a", corev1.PodPending), uidPod("b", corev1.PodRunning)})
	if got := summary(evs); !slices.Equal(got, []string{"ADDED a Pending", "ADDED b Running"}) {
		t.Fatalf("first = %v", got)
	}
	prev, evs = DiffPods(prev, []*corev1.Pod{uidPod("a", corev1.PodRunning), uidPod("b", corev1.PodRunning)})
	if got := summary(evs); !slices.Equal(got, []string{"MODIFIED a Running"}) {
		t.Fatalf("second = %v", got)
	}
	// The same object, or an equal new one: no event.
	b := prev["b"]
	prev, evs = DiffPods(prev, []*corev1.Pod{uidPod("a", corev1.PodRunning), b})
	if len(evs) != 0 || prev["b"] != b {
		t.Fatalf("unchanged = %v", summary(evs))
	}
	_, evs = DiffPods(prev, []*corev1.Pod{uidPod("b", corev1.PodRunning)})
	if got := summary(evs); !slices.Equal(got, []string{"DELETED a Running"}) {
		t.Fatalf("third = %v", got)
	}
}

func summary(evs []WatchEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s %s %s", e.Type, e.Object.Name, e.Object.Status.Phase))
	}
	return out
}

// watchBackend's pods change under a lock and signal Changed.
type watchBackend struct {
	fakeBackend
	mu       sync.Mutex
	pods     []*corev1.Pod
	changed  chan struct{}
	notReady bool // SourcesReady false
}

func (b *watchBackend) Pods() []*corev1.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pods
}
func (b *watchBackend) set(pods ...*corev1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pods = pods
	close(b.changed)
	b.changed = make(chan struct{})
}
func (b *watchBackend) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}
func (b *watchBackend) Metrics() http.Handler { return http.NotFoundHandler() }
func (b *watchBackend) SourcesReady() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.notReady
}
func (b *watchBackend) AllEvents(string) ([]ObjectEvent, error) { return nil, nil }
func (b *watchBackend) Top(context.Context, string, time.Duration) ([]PodMetrics, error) {
	return nil, nil
}

// The watch stream sends ADDED for the pods there, then the changes the
// backend signals.
func TestWatchPodsStream(t *testing.T) {
	b := &watchBackend{pods: []*corev1.Pod{uidPod("a", corev1.PodPending)}, changed: make(chan struct{})}
	c := startServer(t, b, func(s *Server) { s.EnableObserve(b) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	err := c.WatchPods(ctx, func(e WatchEvent) error {
		got = append(got, summary([]WatchEvent{e})...)
		switch len(got) {
		case 1:
			b.set(uidPod("a", corev1.PodRunning))
		case 2:
			b.set()
		case 3:
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ADDED a Pending", "MODIFIED a Running", "DELETED a Running"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

// A synced watch sends one bookmark, right after the pods as they were.
func TestWatchPodsSynced(t *testing.T) {
	b := &watchBackend{pods: []*corev1.Pod{uidPod("a", corev1.PodPending), uidPod("b", corev1.PodRunning)}, changed: make(chan struct{})}
	c := startServer(t, b, func(s *Server) { s.EnableObserve(b) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	err := c.WatchPodsSynced(ctx, func(e WatchEvent) error {
		if e.Type == WatchBookmark {
			got = append(got, e.Type+" "+e.Object.Annotations[metav1.InitialEventsAnnotationKey])
			b.set(uidPod("a", corev1.PodRunning), b.pods[1])
			return nil
		}
		got = append(got, summary([]WatchEvent{e})...)
		if e.Type == WatchModified {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ADDED a Pending", "ADDED b Running", "BOOKMARK true", "MODIFIED a Running"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

// Before the first manifest snapshot the list is not all there is: the
// bookmark waits for it.
func TestWatchBookmarkWaitsForSources(t *testing.T) {
	b := &watchBackend{changed: make(chan struct{}), notReady: true}
	c := startServer(t, b, func(s *Server) { s.EnableObserve(b) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	go func() {
		b.set(uidPod("a", corev1.PodRunning)) // the snapshot applied
		b.mu.Lock()
		b.notReady = false
		b.mu.Unlock()
		b.set(uidPod("a", corev1.PodRunning))
	}()
	err := c.WatchPodsSynced(ctx, func(e WatchEvent) error {
		got = append(got, e.Type+" "+e.Object.Name)
		if e.Type == WatchBookmark {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ADDED a", "BOOKMARK "}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

// An open watch does not hold the server's shutdown: the stream ends and
// Listen returns at once.
func TestWatchEndsAtShutdown(t *testing.T) {
	b := &watchBackend{pods: []*corev1.Pod{uidPod("a", corev1.PodRunning)}, changed: make(chan struct{})}
	dir := t.TempDir()
	sock := dir + "/s.sock"
	srv := NewServer(b, slogDiscard())
	srv.EnableObserve(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Listen(ctx, sock) }()
	c := NewClient(sock)
	if err := waitServer(c); err != nil {
		t.Fatal(err)
	}
	watchErr := make(chan error, 1)
	go func() {
		watchErr <- c.WatchPods(context.Background(), func(WatchEvent) error {
			cancel() // the first event: shut the server down
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Listen: %v", err)
		}
	case <-time.After(1500 * time.Millisecond):
		t.Fatal("shutdown waited for the open watch")
	}
	if err := <-watchErr; err == nil {
		t.Fatal("watch did not report the closed stream")
	}
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func waitServer(c *Client) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := c.get(context.Background(), "/healthz")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A daemon whose watch does not announce the bookmark (an older podhost)
// is ErrNoBookmark at once, not a watch that never syncs.
func TestWatchPodsSyncedOldDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "old.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		_, _ = w.Write([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a","uid":"a"}}}` + "\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = NewClient(sock).WatchPodsSynced(ctx, func(WatchEvent) error { return errors.New("no event expected") })
	if !errors.Is(err, ErrNoBookmark) {
		t.Fatalf("err = %v, want ErrNoBookmark", err)
	}
}
