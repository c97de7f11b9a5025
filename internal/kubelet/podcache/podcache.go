// Package podcache is the runtime pod cache (the kubelet's
// pkg/kubelet/container/cache.go): the last observed containers of each pod,
// with the time they were observed. The PLEG feeds it — a full relist once
// per period sets every entry, a task event marks its pod stale — and the pod
// workers read a pod's entry newer than their last sync (GetNewerThan).
//
// Unlike the kubelet's cache, a reader never waits for the next relist: an
// entry that is older than asked for, or stale, is refreshed at once. The
// cost of a sync does not grow with the number of pods:
//
//   - A pod the cache has an entry for is refreshed by reading the
//     containers it knows by ID: the entry's, those the syncer said it
//     creates (Track) and those a task event named (Invalidate). The entry
//     came from a complete list of the runtime or of the pod, and only the
//     pod's worker creates containers for it, so nothing is missed.
//   - A pod without an entry is listed by its UID label. containerd filters
//     labels by reading every container of the namespace, so this is kept
//     for what the cache cannot know.
//   - A pod that a complete runtime list newer than the reader's last sync
//     did not contain has no containers (the kubelet's GetNewerThan on a pod
//     its relist never saw): the first sync of a new pod lists nothing.
package podcache

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podhost/podhost/internal/model/podstate"
)

// Lister reads the runtime (*runtime.Runtime).
type Lister interface {
	// ListPods lists every pod's containers.
	ListPods(ctx context.Context) ([]*podstate.Pod, error)
	// ListPod lists one pod's containers by its UID label.
	ListPod(ctx context.Context, uid types.UID) (*podstate.Pod, error)
	// PodContainers reads the containers ids of pod uid, skipping those
	// that do not exist or belong to another pod.
	PodContainers(ctx context.Context, uid types.UID, ids []string) (*podstate.Pod, error)
}

type entry struct {
	pod      *podstate.Pod
	observed time.Time // when the list that produced pod started
}

// Cache is safe for concurrent use.
type Cache struct {
	lister Lister
	clock  clock.PassiveClock

	mu   sync.Mutex
	pods map[types.UID]*entry
	// known: container IDs of a pod the entry may lack, read by the pod's
	// next refresh: true when the worker Tracked it, false when only a
	// task event named it.
	known map[types.UID]map[string]bool
	// complete: when the newest complete list of the runtime started.
	complete time.Time
	// eventAt: the time of the pod's newest task event. An entry observed
	// at or before it is stale — also one set by a refresh that started
	// before the event and ended after it.
	eventAt map[types.UID]time.Time
	// forgotten: pods Deleted at that time, whose containers a complete
	// list older than that still vouches for (a pod deleted with exited
	// containers left, re-created with its UID): listed until a complete
	// list newer than their deletion.
	forgotten map[types.UID]time.Time
}

// New returns an empty cache over lister; clk may be nil (real clock).
func New(lister Lister, clk clock.PassiveClock) *Cache {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Cache{lister: lister, clock: clk, pods: map[types.UID]*entry{}, known: map[types.UID]map[string]bool{},
		forgotten: map[types.UID]time.Time{}, eventAt: map[types.UID]time.Time{}}
}

// GetNewerThan returns uid's pod as observed after notBefore: the cached
// entry if it is fresh enough and no event has made it stale, else a new
// list of that pod. The result is never nil and must not be modified.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, notBefore time.Time) (*podstate.Pod, error) {
	c.mu.Lock()
	e := c.pods[uid]
	unknown := len(c.known[uid]) > 0 // a create or an event the entry may lack
	if e != nil && !c.staleLocked(uid, e) && !unknown && e.observed.After(notBefore) {
		c.mu.Unlock()
		return e.pod, nil
	}
	if e == nil && !unknown && c.complete.After(notBefore) && c.complete.After(c.forgotten[uid]) {
		// Not in a complete list newer than the last sync: nothing runs.
		pod := &podstate.Pod{UID: uid}
		c.pods[uid] = &entry{pod: pod, observed: c.complete}
		c.mu.Unlock()
		return pod, nil
	}
	c.mu.Unlock()
	return c.Refresh(ctx, uid)
}

// Refresh reads uid's pod now and stores it (the syncer calls it after it
// changed the pod: started, stopped or removed containers): by ID when it
// has an entry, else by its UID label.
func (c *Cache) Refresh(ctx context.Context, uid types.UID) (*podstate.Pod, error) {
	at := c.clock.Now()
	c.mu.Lock()
	e, ids := c.pods[uid], c.idsLocked(uid)
	c.mu.Unlock()
	var pod *podstate.Pod
	var err error
	if e != nil {
		pod, err = c.lister.PodContainers(ctx, uid, ids)
	} else {
		pod, err = c.lister.ListPod(ctx, uid)
	}
	if err != nil {
		return nil, err
	}
	if pod == nil {
		pod = &podstate.Pod{UID: uid}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deletedSinceLocked(uid, at) {
		return pod, nil // read for a worker that is gone: nothing to keep
	}
	for _, id := range ids {
		delete(c.known[uid], id) // in pod now, or gone; later ones stay
	}
	if len(c.known[uid]) == 0 {
		delete(c.known, uid)
	}
	if e == nil {
		delete(c.forgotten, uid)
	}
	c.setLocked(uid, pod, at)
	return pod, nil
}

// idsLocked is every container ID uid may have: its entry's and the
// known ones.
func (c *Cache) idsLocked(uid types.UID) []string {
	set := maps.Clone(c.known[uid])
	if set == nil {
		set = map[string]bool{}
	}
	if e := c.pods[uid]; e != nil {
		for _, ct := range e.pod.Containers {
			set[ct.ID] = true
		}
	}
	return slices.Collect(maps.Keys(set))
}

// Track records that the pod's worker creates container id (called before
// the create): the pod's next refresh reads it even if the create fails
// half-way or the entry was replaced by a relist that started before it.
func (c *Cache) Track(uid types.UID, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trackLocked(uid, id, true)
}

func (c *Cache) trackLocked(uid types.UID, id string, byWorker bool) {
	if c.known[uid] == nil {
		c.known[uid] = map[string]bool{}
	}
	c.known[uid][id] = c.known[uid][id] || byWorker
}

// ListPods lists every pod in the runtime and records the list (SetAll):
// callers that list the runtime anyway (the manager at start, housekeeping)
// keep the cache complete.
func (c *Cache) ListPods(ctx context.Context) ([]*podstate.Pod, error) {
	at := c.clock.Now()
	pods, err := c.lister.ListPods(ctx)
	if err != nil {
		return nil, err
	}
	c.SetAll(pods, at)
	return pods, nil
}

// SetAll records a full relist that started at at: every pod in pods is
// set, and the cached pods the list lacks are set empty. Entries observed
// after at (a Refresh that overtook the relist) are kept.
func (c *Cache) SetAll(pods []*podstate.Pod, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.complete) {
		c.complete = at
	}
	c.pruneLocked(at)
	seen := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		seen[p.UID] = true
		if _, ok := c.forgotten[p.UID]; ok {
			continue // Deleted at or after at (older ones went above): no worker
		}
		c.setLocked(p.UID, p, at)
	}
	for uid, e := range c.pods {
		if !seen[uid] && !e.observed.After(at) {
			// No containers as of at; any created since were Tracked, so
			// the next refresh reads them by ID. Dropping the entry would
			// make that refresh a label list, which containerd serves by
			// reading every container: each pod of a cold start that a
			// relist overtook paid one.
			c.pods[uid] = &entry{pod: &podstate.Pod{UID: uid}, observed: at}
		}
	}
}

// pruneLocked drops what a complete list started at at makes moot:
// deletions and events older than it, and the container IDs that only
// events named for a pod with no entry (one deleted, an orphan).
func (c *Cache) pruneLocked(at time.Time) {
	for uid, t := range c.forgotten {
		if at.After(t) {
			delete(c.forgotten, uid)
		}
	}
	for uid, t := range c.eventAt {
		if t.Before(at) { // the list saw what the event changed
			delete(c.eventAt, uid)
		}
	}
	for uid, ids := range c.known {
		_, evented := c.eventAt[uid]
		if c.pods[uid] == nil && !evented && !slices.Contains(slices.Collect(maps.Values(ids)), true) {
			delete(c.known, uid)
		}
	}
}

// Invalidate records a task event of container id, of pod uid, at at: an
// entry observed at or before at is stale (the next read reads the pod
// again, container id included), whether it is set already or by a
// refresh still under way.
func (c *Cache) Invalidate(uid types.UID, id string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.eventAt[uid]) {
		c.eventAt[uid] = at
	}
	// A container the entry lacks is read by the next refresh, unless the
	// entry was listed after the event (it would be in it).
	if e := c.pods[uid]; id != "" && (e == nil || (!e.observed.After(at) && !e.pod.Has(id))) {
		c.trackLocked(uid, id, false)
	}
}

// deletedSinceLocked: uid was Deleted after at, so a read that began at
// at must not bring its entry back (it would stay, set empty by every
// later relist, with no worker to Delete it again).
func (c *Cache) deletedSinceLocked(uid types.UID, at time.Time) bool {
	t, ok := c.forgotten[uid]
	return ok && at.Before(t)
}

func (c *Cache) staleLocked(uid types.UID, e *entry) bool {
	t, ok := c.eventAt[uid]
	return ok && !t.Before(e.observed)
}

// Delete forgets uid (its worker is gone). Its containers may remain (a
// terminated pod that is still desired keeps its exited ones): until a
// complete list newer than now, the pod is listed, not taken as empty.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	delete(c.pods, uid)
	delete(c.known, uid)
	delete(c.eventAt, uid)
	c.forgotten[uid] = c.clock.Now()
	c.mu.Unlock()
}

// Len is the number of cached pods.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods)
}

func (c *Cache) setLocked(uid types.UID, pod *podstate.Pod, at time.Time) {
	if e := c.pods[uid]; e != nil && e.observed.After(at) {
		return
	}
	c.pods[uid] = &entry{pod: pod, observed: at}
}
