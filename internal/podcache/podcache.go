// Package podcache is the runtime pod cache (the kubelet's
// pkg/kubelet/container/cache.go): the last observed containers of each pod,
// with the time they were observed. The PLEG feeds it — a full relist once
// per period sets every entry, a task event marks its pod stale — and the pod
// workers read a pod's entry newer than their last sync (GetNewerThan).
//
// Unlike the kubelet's cache, a reader never waits for the next relist: an
// entry that is older than asked for, or stale, is refreshed at once by one
// list of that pod alone (filtered by its UID label). Either way the cost of
// a sync does not grow with the number of pods.
package podcache

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podhost/podhost/internal/podstate"
)

// Lister lists one pod's containers (runtime.Runtime.ListPod).
type Lister interface {
	ListPod(ctx context.Context, uid types.UID) (*podstate.Pod, error)
}

type entry struct {
	pod      *podstate.Pod
	observed time.Time // when the list that produced pod started
	stale    bool      // an event came after observed
}

// Cache is safe for concurrent use.
type Cache struct {
	lister Lister
	clock  clock.PassiveClock

	mu   sync.Mutex
	pods map[types.UID]*entry
}

// New returns an empty cache over lister; clk may be nil (real clock).
func New(lister Lister, clk clock.PassiveClock) *Cache {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Cache{lister: lister, clock: clk, pods: map[types.UID]*entry{}}
}

// GetNewerThan returns uid's pod as observed after notBefore: the cached
// entry if it is fresh enough and no event has made it stale, else a new
// list of that pod. The result is never nil and must not be modified.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, notBefore time.Time) (*podstate.Pod, error) {
	c.mu.Lock()
	e := c.pods[uid]
	if e != nil && !e.stale && e.observed.After(notBefore) {
		c.mu.Unlock()
		return e.pod, nil
	}
	c.mu.Unlock()
	return c.Refresh(ctx, uid)
}

// Refresh lists uid's pod now and stores it (the syncer calls it after it
// changed the pod: started, stopped or removed containers).
func (c *Cache) Refresh(ctx context.Context, uid types.UID) (*podstate.Pod, error) {
	at := c.clock.Now()
	pod, err := c.lister.ListPod(ctx, uid)
	if err != nil {
		return nil, err
	}
	if pod == nil {
		pod = &podstate.Pod{UID: uid}
	}
	c.set(uid, pod, at)
	return pod, nil
}

// SetAll records a full relist that started at at: every pod in pods is
// set, and pods the list lacks are dropped (the next read lists them). Entries
// observed after at (a Refresh that overtook the relist) are kept.
func (c *Cache) SetAll(pods []*podstate.Pod, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		seen[p.UID] = true
		c.setLocked(p.UID, p, at)
	}
	for uid, e := range c.pods {
		if !seen[uid] && !e.observed.After(at) {
			delete(c.pods, uid)
		}
	}
}

// Invalidate marks uid's entry stale if it was observed before at (a task
// event of the pod happened at at): the next read lists the pod again.
func (c *Cache) Invalidate(uid types.UID, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.pods[uid]; e != nil && !e.observed.After(at) {
		e.stale = true
	}
}

// Delete forgets uid (its pod is gone for good).
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	delete(c.pods, uid)
	c.mu.Unlock()
}

// Len is the number of cached pods.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods)
}

func (c *Cache) set(uid types.UID, pod *podstate.Pod, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(uid, pod, at)
}

func (c *Cache) setLocked(uid types.UID, pod *podstate.Pod, at time.Time) {
	if e := c.pods[uid]; e != nil && e.observed.After(at) {
		return
	}
	c.pods[uid] = &entry{pod: pod, observed: at}
}
