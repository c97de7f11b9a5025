package kubeapi

import (
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// The hub gives the daemon's objects resourceVersions and keeps the recent
// changes, so lists carry a resourceVersion and watches resume from one, as
// on the API server's watch cache. The daemon has no resourceVersions of
// its own: the hub compares what its sources return now with what it saw
// last (the same pointer is the same object; else a semantic deep
// comparison) and numbers every difference.
//
// resourceVersions are one counter for every kind, seeded from the clock at
// start, so they only grow across daemon restarts: a client's version from
// an earlier daemon is older than anything the ring holds and gets 410
// Expired (it relists), never a wrong replay.

const (
	// ringMax, ringMaxBytes bound the changes kept for watches to resume
	// from; a watch older than the oldest kept change gets 410 Expired.
	ringMax      = 4096
	ringMaxBytes = 16 << 20
)

// source returns the current objects of one kind, each with its namespace
// and name set. The objects may be shared (read-only): the hub copies what
// it keeps.
type source func() []runtime.Object

type entry struct {
	src runtime.Object // what the source returned: compared at the next sync
	obj runtime.Object // the copy served, resourceVersion set
}

type change struct {
	rv   uint64
	kind string
	typ  watch.EventType
	obj  runtime.Object
	prev runtime.Object // the version before (MODIFIED, DELETED)
	size int
}

type hub struct {
	sources map[string]source

	mu       sync.Mutex
	rv       uint64
	start    uint64 // the first resourceVersion of this process
	dropped  uint64 // the newest change no longer in the ring (0: none)
	current  map[string]map[string]*entry
	synced   map[string]bool // kinds synced at least once (baseline, no events)
	ring     []change
	bytes    int
	wake     chan struct{} // closed at the next change
	watchers map[string]int
}

func newHub(sources map[string]source, now time.Time) *hub {
	rv := uint64(now.UnixMicro())
	return &hub{sources: sources, rv: rv, start: rv, current: map[string]map[string]*entry{},
		synced: map[string]bool{}, wake: make(chan struct{}), watchers: map[string]int{}}
}

func objectKey(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// sync compares kind's source with what the hub holds and records the
// differences. The first sync of a kind records its objects without events
// (nobody can have watched them yet).
func (h *hub) sync(kind string) {
	src := h.sources[kind]
	if src == nil {
		return
	}
	objs := src()
	h.mu.Lock()
	defer h.mu.Unlock()
	cur := h.current[kind]
	if cur == nil {
		cur = map[string]*entry{}
		h.current[kind] = cur
	}
	first := !h.synced[kind]
	h.synced[kind] = true
	seen := make(map[string]bool, len(objs))
	changed := false
	for _, o := range objs {
		k := objectKey(o)
		seen[k] = true
		e := cur[k]
		if e != nil && (e.src == o || equality.Semantic.DeepEqual(e.src, o)) {
			e.src = o
			continue
		}
		typ, prev := watch.Modified, runtime.Object(nil)
		if e == nil {
			typ = watch.Added
		} else {
			prev = e.obj
		}
		cur[k] = &entry{src: o, obj: h.stamp(o)}
		if !first {
			h.record(kind, typ, cur[k].obj, prev)
			changed = true
		}
	}
	for k, e := range cur {
		if !seen[k] {
			delete(cur, k)
			h.record(kind, watch.Deleted, h.stamp(e.obj), e.obj)
			changed = true
		}
	}
	if changed {
		close(h.wake)
		h.wake = make(chan struct{})
	}
}

// stamp copies o with the next resourceVersion (h.mu held).
func (h *hub) stamp(o runtime.Object) runtime.Object {
	c := o.DeepCopyObject()
	h.rv++
	if m, err := meta.Accessor(c); err == nil {
		m.SetResourceVersion(strconv.FormatUint(h.rv, 10))
	}
	return c
}

type sizer interface{ Size() int }

// record appends a change to the ring, dropping the oldest beyond its
// bounds (h.mu held).
func (h *hub) record(kind string, typ watch.EventType, obj, prev runtime.Object) {
	size := 1024
	if s, ok := obj.(sizer); ok {
		size = s.Size()
	}
	h.ring = append(h.ring, change{rv: h.rv, kind: kind, typ: typ, obj: obj, prev: prev, size: size})
	h.bytes += size
	for len(h.ring) > ringMax || h.bytes > ringMaxBytes {
		h.dropped = h.ring[0].rv
		h.bytes -= h.ring[0].size
		h.ring[0] = change{}
		h.ring = h.ring[1:]
	}
}

// snapshot is kind's objects (synced now) and the resourceVersion they are
// current at.
func (h *hub) snapshot(kind string) ([]runtime.Object, uint64) {
	h.sync(kind)
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]runtime.Object, 0, len(h.current[kind]))
	for _, e := range h.current[kind] {
		out = append(out, e.obj)
	}
	return out, h.rv
}

// since returns kind's changes after rv, the resourceVersion they reach,
// and a channel closed at the next change. expired: rv is older than what
// the ring holds (or than this process).
func (h *hub) since(kind string, rv uint64) (out []change, upto uint64, wake <-chan struct{}, expired bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rv < h.start || rv < h.dropped {
		return nil, h.rv, h.wake, true
	}
	for _, c := range h.ring[sort.Search(len(h.ring), func(i int) bool { return h.ring[i].rv > rv }):] {
		if c.kind == kind {
			out = append(out, c)
		}
	}
	return out, h.rv, h.wake, false
}

// addWatcher and removeWatcher count a kind's watches: Run keeps the
// watched kinds synced at every change.
func (h *hub) addWatcher(kind string) {
	h.mu.Lock()
	h.watchers[kind]++
	h.mu.Unlock()
}

func (h *hub) removeWatcher(kind string) {
	h.mu.Lock()
	if h.watchers[kind]--; h.watchers[kind] <= 0 {
		delete(h.watchers, kind)
	}
	h.mu.Unlock()
}

func (h *hub) watchedKinds() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.watchers))
	for k := range h.watchers {
		out = append(out, k)
	}
	return out
}
