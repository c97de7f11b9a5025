package syncer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/podcache"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/model/podstate"
)

// countingLister records which pods were read: a sync must read only its
// own pod, however many pods run, and never list the whole runtime.
type countingLister struct {
	rt    *fakeRuntime
	lists map[types.UID]int // ListPod and PodContainers
	full  int               // ListPods
}

func (c *countingLister) ListPod(ctx context.Context, uid types.UID) (*podstate.Pod, error) {
	c.lists[uid]++
	return c.rt.ListPod(ctx, uid)
}

func (c *countingLister) PodContainers(ctx context.Context, uid types.UID, ids []string) (*podstate.Pod, error) {
	c.lists[uid]++
	return c.rt.PodContainers(ctx, uid, ids)
}

func (c *countingLister) ListPods(ctx context.Context) ([]*podstate.Pod, error) {
	c.full++
	return c.rt.ListPods(ctx)
}

// Per-sync work does not grow with the number of pods: with 200 pods
// running, a sync of one of them (woken as by a PLEG event) lists only that
// pod, a bounded number of times, and never the whole runtime nor every
// pod's sandbox records.
func TestSyncOfOnePodListsOnlyThatPod(t *testing.T) {
	for _, n := range []int{1, 200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := newWorld()
			lister := &countingLister{rt: w.rt, lists: map[types.UID]int{}}
			cache := podcache.New(lister, nil)
			w.s.cache = cache
			pods := make([]*corev1.Pod, n)
			for i := range pods {
				pods[i] = worldPod(corev1.RestartPolicyAlways, "app")
				pods[i].Name, pods[i].UID = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
				if _, err := syncOnce(t, w, pods[i]); err != nil {
					t.Fatal(err)
				}
			}
			lister.lists = map[types.UID]int{}
			pw := podworkers.New(w.s, podworkers.Options{Cache: cache, ResyncInterval: time.Hour,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer func() { _ = pw.Shutdown(context.Background()) }()
			target := pods[n/2]
			w.obs.mu.Lock()
			before := len(w.obs.statuses)
			w.obs.mu.Unlock()
			w.host.mu.Lock()
			w.host.sandboxLists = 0
			w.host.mu.Unlock()
			cache.Invalidate(target.UID, "", time.Now()) // a task event of the pod, as the PLEG reports it
			pw.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodCreate, Pod: target})
			deadline := time.Now().Add(10 * time.Second)
			for {
				w.obs.mu.Lock()
				done := len(w.obs.statuses) > before
				w.obs.mu.Unlock()
				if done || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if len(lister.lists) != 1 || lister.lists[target.UID] == 0 || lister.lists[target.UID] > 2 || lister.full != 0 {
				t.Fatalf("lists during one sync among %d pods: %v (want only %s, at most twice)", n, lister.lists, target.UID)
			}
			w.host.mu.Lock()
			defer w.host.mu.Unlock()
			if w.host.sandboxLists != 0 {
				t.Fatalf("one sync among %d pods read every sandbox record %d times (want its pod's only)", n, w.host.sandboxLists)
			}
		})
	}
}
