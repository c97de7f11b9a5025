// Package pleg is podhost's pod lifecycle event generator: it merges
// containerd task events (fast path) with a periodic relist of the runtime
// (safety net) into per-pod container lifecycle events, like the kubelet's
// PLEG. Consumers only need PodEvent.UID to know which pod to sync.
package pleg

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// DefaultRelist is the default period of the full relist. Changes arrive as
// containerd task events (a broken stream is resubscribed and followed by a
// relist); the periodic relist is only the safety net, as in the kubelet's
// evented PLEG (whose relist runs every 5 min). Each relist reads every
// container record with its spec: 10 s was a fifth of an idle 30-pod
// daemon's CPU (decisions.md 16).
const DefaultRelist = 30 * time.Second

// Runtime is what the PLEG needs from the runtime.
type Runtime interface {
	ListPods(ctx context.Context) ([]*podstate.Pod, error)
	// ContainerPodUID names the pod of a container the PLEG has not seen
	// yet (a task event for a container created since the last relist).
	ContainerPodUID(ctx context.Context, id string) (types.UID, error)
	Events(ctx context.Context) <-chan runtimeapi.Event
}

// Cache is the pod cache the PLEG feeds (internal/kubelet/podcache): every relist
// sets it, every task event makes its pod's entry stale.
type Cache interface {
	SetAll(pods []*podstate.Pod, at time.Time)
	Invalidate(uid types.UID, containerID string, at time.Time)
}

// EventType is a container lifecycle transition.
type EventType string

// Event types (the kubelet's names).
const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerRemoved EventType = "ContainerRemoved"
	// ContainerChanged: created, unknown, or an OOM kill was reported.
	ContainerChanged EventType = "ContainerChanged"
)

// PodEvent is one container transition of one pod.
type PodEvent struct {
	UID         types.UID
	ContainerID string
	Type        EventType
}

// Options configure a PLEG.
type Options struct {
	Relist time.Duration // default DefaultRelist
	Cache  Cache         // optional
	Logger *slog.Logger
}

// state is the PLEG's view of a container.
type state string

const (
	stateRunning     state = "running"
	stateExited      state = "exited"
	stateUnknown     state = "unknown" // created or unknown
	stateNonExistent state = "non-existent"
)

type entry struct {
	uid   types.UID
	state state
}

// PLEG generates pod lifecycle events. Run it once.
type PLEG struct {
	rt     Runtime
	pc     Cache
	relist time.Duration
	log    *slog.Logger
	cache  map[string]entry // container id -> last known
}

// New returns a PLEG over rt.
func New(rt Runtime, opts Options) *PLEG {
	if opts.Relist <= 0 {
		opts.Relist = DefaultRelist
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &PLEG{rt: rt, pc: opts.Cache, relist: opts.Relist, log: opts.Logger, cache: map[string]entry{}}
}

// Run emits events to out until ctx is done. It subscribes to runtime
// events first, then relists (so nothing falls between), then relists
// every period and after a resubscription (a "relist" event). A container
// it has not seen yet is looked up alone, never by a full relist.
func (p *PLEG) Run(ctx context.Context, out chan<- PodEvent) {
	events := p.rt.Events(ctx)
	if !emit(ctx, out, p.doRelist(ctx)) {
		return
	}
	tick := time.NewTicker(p.relist)
	defer tick.Stop()
	for {
		var evs []PodEvent
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil // runtime gave up: relisting still works
				continue
			}
			evs = p.handle(ctx, ev)
		case <-tick.C:
			evs = p.doRelist(ctx)
		}
		if !emit(ctx, out, evs) {
			return
		}
	}
}

func emit(ctx context.Context, out chan<- PodEvent, evs []PodEvent) bool {
	for _, ev := range evs {
		select {
		case out <- ev:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// handle maps one runtime event through the cache.
func (p *PLEG) handle(ctx context.Context, ev runtimeapi.Event) []PodEvent {
	if ev.Type == runtimeapi.EventRelist {
		return p.doRelist(ctx)
	}
	e, ok := p.cache[ev.ContainerID]
	if !ok {
		uid, err := p.rt.ContainerPodUID(ctx, ev.ContainerID)
		if err != nil || uid == "" {
			return nil // removed already, or not ours: the relist settles it
		}
		e = entry{uid: uid, state: stateUnknown}
	}
	if p.pc != nil {
		at := ev.Time
		if at.IsZero() {
			at = time.Now()
		}
		p.pc.Invalidate(e.uid, ev.ContainerID, at)
	}
	switch ev.Type {
	case runtimeapi.EventExit:
		return p.transition(ev.ContainerID, e, stateExited)
	case runtimeapi.EventStart:
		return p.transition(ev.ContainerID, e, stateRunning)
	case runtimeapi.EventOOM:
		return []PodEvent{{UID: e.uid, ContainerID: ev.ContainerID, Type: ContainerChanged}}
	}
	return nil
}

func (p *PLEG) transition(id string, e entry, to state) []PodEvent {
	evs := generate(e.uid, id, e.state, to)
	p.cache[id] = entry{uid: e.uid, state: to}
	return evs
}

// doRelist lists the runtime and diffs it against the cache. On a list
// error it keeps the cache and emits nothing (the next relist retries).
func (p *PLEG) doRelist(ctx context.Context) []PodEvent {
	at := time.Now()
	pods, err := p.rt.ListPods(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("pleg: relist failed", "err", err)
		}
		return nil
	}
	if p.pc != nil {
		p.pc.SetAll(pods, at)
	}
	seen := make(map[string]entry, len(p.cache))
	for _, pod := range pods {
		for _, c := range pod.Containers {
			seen[c.ID] = entry{uid: pod.UID, state: fromContainer(c.State)}
		}
	}
	var evs []PodEvent
	for id, now := range seen {
		old, ok := p.cache[id]
		if !ok {
			old.state = stateNonExistent
		}
		evs = append(evs, generate(now.uid, id, old.state, now.state)...)
	}
	for id, old := range p.cache {
		if _, ok := seen[id]; !ok {
			evs = append(evs, generate(old.uid, id, old.state, stateNonExistent)...)
		}
	}
	p.cache = seen
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].UID != evs[j].UID {
			return evs[i].UID < evs[j].UID
		}
		return evs[i].ContainerID < evs[j].ContainerID
	})
	return evs
}

func fromContainer(s podstate.ContainerState) state {
	switch s {
	case podstate.StateRunning:
		return stateRunning
	case podstate.StateExited:
		return stateExited
	default:
		return stateUnknown
	}
}

// generate is the kubelet's generateEvents.
func generate(uid types.UID, id string, from, to state) []PodEvent {
	if from == to {
		return nil
	}
	ev := func(t EventType) PodEvent { return PodEvent{UID: uid, ContainerID: id, Type: t} }
	switch to {
	case stateRunning:
		return []PodEvent{ev(ContainerStarted)}
	case stateExited:
		return []PodEvent{ev(ContainerDied)}
	case stateUnknown:
		return []PodEvent{ev(ContainerChanged)}
	}
	// to non-existent
	if from == stateExited {
		return []PodEvent{ev(ContainerRemoved)}
	}
	return []PodEvent{ev(ContainerDied), ev(ContainerRemoved)}
}
