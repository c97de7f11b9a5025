package api

// Observability endpoints (registered by Server.EnableObserve):
//
//	GET /metrics                                  Prometheus text format
//	GET /v1/pods?watch=true                       newline-delimited WatchEvent JSON: ADDED for
//	                                              every pod, then one event per change of a pod
//	                                              (ADDED, MODIFIED, DELETED) until the client leaves;
//	                                              with sendInitialEvents=true, a BOOKMARK after the
//	                                              ADDED of the pods as they were (annotation
//	                                              k8s.io/initial-events-end: "true", as the API
//	                                              server's watch list)
//	GET /v1/events?namespace=&pod=&watch=         []ObjectEvent (oldest first); with watch=true,
//	                                              newline-delimited ObjectEvent JSON, the existing
//	                                              ones first, then each new one
//	GET /v1/top?namespace=&window=                []PodMetrics: CPU rate over window (default 1s)
//	                                              and memory working set, from the pod cgroups
//
// Watches wake on the status manager's change signal (a new status, an
// event, a pod added or removed) and at least every watchResync, and send
// the differences since what they last sent: there is no resource version
// to resume from; a client that reconnects gets the full list again.

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// watchResync bounds how long a watch can miss a change that did not
// signal (e.g. a pod's removal from the desired set before its status goes).
const watchResync = time.Second

// Watch event types (as the Kubernetes API's).
const (
	WatchAdded    = "ADDED"
	WatchModified = "MODIFIED"
	WatchDeleted  = "DELETED"
	// WatchBookmark ends the initial events of a watch that asked for it.
	WatchBookmark = "BOOKMARK"
	// InitialEventsHeader ("true") says the watch will send the bookmark:
	// a client can tell a daemon that would not.
	InitialEventsHeader = "Podhost-Initial-Events-End"
)

// WatchEvent is one change of a pod.
type WatchEvent struct {
	Type   string     `json:"type"`
	Object corev1.Pod `json:"object"`
}

// ObjectEvent is an event with the pod it is about.
type ObjectEvent struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Event
}

// PodMetrics is one pod's usage (metrics.k8s.io's PodMetrics, flattened).
type PodMetrics struct {
	Namespace   string             `json:"namespace"`
	Name        string             `json:"name"`
	CPUMillis   int64              `json:"cpuMillis"`
	MemoryBytes int64              `json:"memoryBytes"`
	Containers  []ContainerMetrics `json:"containers"`
}

// ContainerMetrics is one running container's usage.
type ContainerMetrics struct {
	Name        string `json:"name"`
	CPUMillis   int64  `json:"cpuMillis"`
	MemoryBytes int64  `json:"memoryBytes"`
}

// Observability is what the observability endpoints need from the daemon.
type Observability interface {
	// Changed is closed at the next change of a status, event or the set
	// of tracked pods.
	Changed() <-chan struct{}
	// AllEvents returns the events of every pod in namespace ("" = all).
	AllEvents(namespace string) ([]ObjectEvent, error)
	// Top samples the pod cgroups over window.
	Top(ctx context.Context, namespace string, window time.Duration) ([]PodMetrics, error)
	// Metrics serves /metrics.
	Metrics() http.Handler
}

// EnableObserve registers the observability endpoints; call before Listen.
func (s *Server) EnableObserve(o Observability) {
	s.obs = o
	s.mux.Handle("GET /metrics", o.Metrics())
	s.mux.HandleFunc("GET /v1/events", s.allEvents)
	s.mux.HandleFunc("GET /v1/top", s.top)
}

func (s *Server) top(w http.ResponseWriter, r *http.Request) {
	window := time.Second
	if v := r.URL.Query().Get("window"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > time.Minute {
			http.Error(w, "window: want a duration in (0, 1m]", http.StatusBadRequest)
			return
		}
		window = d
	}
	pm, err := s.obs.Top(r.Context(), r.URL.Query().Get("namespace"), window)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if pm == nil {
		pm = []PodMetrics{}
	}
	writeJSON(w, pm)
}

func (s *Server) allEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	list := func() ([]ObjectEvent, error) {
		evs, err := s.obs.AllEvents(q.Get("namespace"))
		if err != nil || q.Get("pod") == "" {
			return evs, err
		}
		var out []ObjectEvent
		for _, e := range evs {
			if e.Pod == q.Get("pod") {
				out = append(out, e)
			}
		}
		return out, nil
	}
	if q.Get("watch") != "true" {
		evs, err := list()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if evs == nil {
			evs = []ObjectEvent{}
		}
		writeJSON(w, evs)
		return
	}
	var sent sentEvents
	s.stream(w, r, func(enc *json.Encoder) error {
		evs, err := list()
		if err != nil {
			return err
		}
		var fresh []ObjectEvent
		sent, fresh = sent.update(evs)
		for _, e := range fresh {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// sentEvents is what an events watch sent that the backend still lists.
// An event gone from the list (beyond the per-pod cap of the store, its
// pod deleted) never comes back, so forgetting it bounds the set by what
// the backend keeps, not by the life of the connection.
type sentEvents map[ObjectEvent]struct{}

// update returns the set for the events listed now, and those of them not
// sent yet, in order.
func (s sentEvents) update(evs []ObjectEvent) (sentEvents, []ObjectEvent) {
	next := make(sentEvents, len(evs))
	var fresh []ObjectEvent
	for _, e := range evs {
		if _, dup := next[e]; dup {
			continue
		}
		next[e] = struct{}{}
		if _, ok := s[e]; !ok {
			fresh = append(fresh, e)
		}
	}
	return next, fresh
}

func (s *Server) watchPods(w http.ResponseWriter, r *http.Request) {
	prev := map[types.UID]*corev1.Pod{}
	bookmark := r.URL.Query().Get("sendInitialEvents") == "true"
	if bookmark {
		w.Header().Set(InitialEventsHeader, "true")
	}
	s.stream(w, r, func(enc *json.Encoder) error {
		var evs []WatchEvent
		prev, evs = DiffPods(prev, s.b.Pods())
		if bookmark && s.sourcesReady() {
			evs, bookmark = append(evs, initialEventsEnd()), false
		}
		for _, e := range evs {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// sourcesReadier is a backend that knows when its pod list is complete:
// the first manifest snapshot applied (before it, after a start, the list
// is empty or holds only resumed terminations).
type sourcesReadier interface{ SourcesReady() bool }

// sourcesReady: the pods listed are all there are (the bookmark waits,
// re-checked at each wake, at least every watchResync).
func (s *Server) sourcesReady() bool {
	r, ok := s.b.(sourcesReadier)
	return !ok || r.SourcesReady()
}

// initialEventsEnd is the API server's bookmark after a watch list's
// initial events.
func initialEventsEnd() WatchEvent {
	e := WatchEvent{Type: WatchBookmark}
	e.Object.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	return e
}

// stream calls send at once and after every change signal (or
// watchResync), flushing each time, until the client goes, send fails or
// the server shuts down.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, send func(*json.Encoder) error) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	t := time.NewTicker(watchResync)
	defer t.Stop()
	for {
		changed := s.obs.Changed()
		if err := send(enc); err != nil {
			s.log.Debug("watch ended", "path", r.URL.Path, "err", err)
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		case <-changed:
		case <-t.C:
		}
	}
}

// DiffPods compares the pods now with the ones last sent (by UID) and
// returns the new map with the events: ADDED for new pods, MODIFIED for
// pods whose object changed, DELETED for pods that are gone. The backend
// hands out the same object until its pod changes (Backend.Pods), so an
// unchanged pod costs a pointer comparison and a diff is O(changed pods);
// a new object is compared with reflect.DeepEqual (both sides come from
// one source, so semantic equality's care for Quantity and Time forms buys
// nothing, at four times the cost).
func DiffPods(prev map[types.UID]*corev1.Pod, now []*corev1.Pod) (map[types.UID]*corev1.Pod, []WatchEvent) {
	next := make(map[types.UID]*corev1.Pod, len(now))
	var evs []WatchEvent
	for _, p := range now {
		next[p.UID] = p
		old, ok := prev[p.UID]
		switch {
		case !ok:
			evs = append(evs, WatchEvent{Type: WatchAdded, Object: *p})
		case old != p && !reflect.DeepEqual(*old, *p):
			evs = append(evs, WatchEvent{Type: WatchModified, Object: *p})
		}
	}
	for uid, p := range prev {
		if _, ok := next[uid]; !ok {
			evs = append(evs, WatchEvent{Type: WatchDeleted, Object: *p})
		}
	}
	return next, evs
}
