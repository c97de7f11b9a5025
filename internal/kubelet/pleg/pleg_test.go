package pleg

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// fakeRuntime serves a mutable list of pods and a channel of events.
type fakeRuntime struct {
	mu     sync.Mutex
	pods   []*podstate.Pod
	err    error
	lists  int
	events chan runtimeapi.Event
}

func newFake() *fakeRuntime { return &fakeRuntime{events: make(chan runtimeapi.Event)} }

func (f *fakeRuntime) ListPods(context.Context) ([]*podstate.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	return f.pods, f.err
}

func (f *fakeRuntime) Events(context.Context) <-chan runtimeapi.Event { return f.events }

func (f *fakeRuntime) ContainerPodUID(_ context.Context, id string) (types.UID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		for _, c := range p.Containers {
			if c.ID == id {
				return p.UID, nil
			}
		}
	}
	return "", errors.New("not found")
}

// set replaces the runtime's content: pod uid -> container id -> state.
func (f *fakeRuntime) set(pods map[types.UID]map[string]podstate.ContainerState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = nil
	for uid, cs := range pods {
		p := &podstate.Pod{UID: uid}
		for id, st := range cs {
			p.Containers = append(p.Containers, &podstate.Container{ID: id, State: st})
		}
		f.pods = append(f.pods, p)
	}
}

func (f *fakeRuntime) listCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

type harness struct {
	t    *testing.T
	rt   *fakeRuntime
	out  chan PodEvent
	stop func()
}

func start(t *testing.T, rt *fakeRuntime, relist time.Duration) *harness {
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, rt: rt, out: make(chan PodEvent, 100)}
	done := make(chan struct{})
	go func() { New(rt, Options{Relist: relist}).Run(ctx, h.out); close(done) }()
	h.stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(h.stop)
	return h
}

// expect reads exactly the given events (in order).
func (h *harness) expect(want ...PodEvent) {
	h.t.Helper()
	var got []PodEvent
	for range want {
		select {
		case ev := <-h.out:
			got = append(got, ev)
		case <-time.After(5 * time.Second):
			h.t.Fatalf("timeout: got %v, want %v", got, want)
		}
	}
	if !reflect.DeepEqual(got, want) {
		h.t.Fatalf("got %v\nwant %v", got, want)
	}
}

// send delivers a runtime event (the PLEG has consumed it once send returns).
func (h *harness) send(ev runtimeapi.Event) {
	h.t.Helper()
	select {
	case h.rt.events <- ev:
	case <-time.After(5 * time.Second):
		h.t.Fatal("PLEG does not read events")
	}
}

const hour = time.Hour

func TestInitialRelist(t *testing.T) {
	rt := newFake()
	rt.set(map[types.UID]map[string]podstate.ContainerState{
		"u1": {"a": podstate.StateRunning, "b": podstate.StateExited},
		"u2": {"c": podstate.StateCreated},
	})
	h := start(t, rt, hour)
	h.expect(
		PodEvent{"u1", "a", ContainerStarted},
		PodEvent{"u1", "b", ContainerDied},
		PodEvent{"u2", "c", ContainerChanged},
	)
}

func TestEventsUseCacheWithoutRelist(t *testing.T) {
	rt := newFake()
	rt.set(map[types.UID]map[string]podstate.ContainerState{"u1": {"a": podstate.StateRunning}})
	h := start(t, rt, hour)
	h.expect(PodEvent{"u1", "a", ContainerStarted})
	h.send(runtimeapi.Event{ContainerID: "a", Type: runtimeapi.EventOOM})
	h.expect(PodEvent{"u1", "a", ContainerChanged})
	h.send(runtimeapi.Event{ContainerID: "a", Type: runtimeapi.EventExit, ExitCode: 137})
	h.expect(PodEvent{"u1", "a", ContainerDied})
	h.send(runtimeapi.Event{ContainerID: "a", Type: runtimeapi.EventExit}) // duplicate: nothing
	if n := rt.listCount(); n != 1 {
		t.Fatalf("%d lists, want only the initial one", n)
	}
	// A relist that agrees with the cache emits nothing; the removal does.
	rt.set(nil)
	h.send(runtimeapi.Event{Type: runtimeapi.EventRelist})
	h.expect(PodEvent{"u1", "a", ContainerRemoved})
	h.marker("u2")
}

// marker sends an event only a fresh container of uid produces: anything
// emitted before it (wrongly) shows up in expect.
func (h *harness) marker(uid types.UID) {
	h.t.Helper()
	h.rt.mu.Lock()
	h.rt.pods = append(h.rt.pods, &podstate.Pod{UID: uid, Containers: []*podstate.Container{{ID: "marker-" + string(uid), State: podstate.StateRunning}}})
	h.rt.mu.Unlock()
	h.send(runtimeapi.Event{ContainerID: "marker-" + string(uid), Type: runtimeapi.EventStart})
	h.expect(PodEvent{uid, "marker-" + string(uid), ContainerStarted})
}

// A container started since the last relist is looked up alone: no full
// relist per start (that would make N starts cost N full lists).
func TestUnknownContainerIsLookedUpAlone(t *testing.T) {
	rt := newFake()
	h := start(t, rt, hour)
	rt.set(map[types.UID]map[string]podstate.ContainerState{"u9": {"new": podstate.StateRunning}})
	h.send(runtimeapi.Event{ContainerID: "new", Type: runtimeapi.EventStart})
	h.expect(PodEvent{"u9", "new", ContainerStarted})
	if n := rt.listCount(); n != 1 {
		t.Fatalf("%d full lists, want only the initial one", n)
	}
}

type fakeCache struct {
	mu          sync.Mutex
	sets        int
	invalidated []types.UID
}

func (c *fakeCache) SetAll([]*podstate.Pod, time.Time) { c.mu.Lock(); c.sets++; c.mu.Unlock() }
func (c *fakeCache) Invalidate(uid types.UID, _ string, _ time.Time) {
	c.mu.Lock()
	c.invalidated = append(c.invalidated, uid)
	c.mu.Unlock()
}

// Relists set the pod cache; task events make their pod's entry stale.
func TestFeedsPodCache(t *testing.T) {
	rt := newFake()
	rt.set(map[types.UID]map[string]podstate.ContainerState{"u1": {"a": podstate.StateRunning}})
	pc := &fakeCache{}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan PodEvent, 10)
	done := make(chan struct{})
	go func() { New(rt, Options{Relist: hour, Cache: pc}).Run(ctx, out); close(done) }()
	defer func() { cancel(); <-done }()
	<-out
	rt.events <- runtimeapi.Event{ContainerID: "a", Type: runtimeapi.EventExit, Time: time.Now()}
	<-out
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.sets != 1 || !reflect.DeepEqual(pc.invalidated, []types.UID{"u1"}) {
		t.Fatalf("sets=%d invalidated=%v", pc.sets, pc.invalidated)
	}
}

func TestPeriodicRelistDiffs(t *testing.T) {
	rt := newFake()
	rt.set(map[types.UID]map[string]podstate.ContainerState{
		"u1": {"run": podstate.StateRunning, "dead": podstate.StateExited},
	})
	h := start(t, rt, 10*time.Millisecond)
	h.expect(PodEvent{"u1", "dead", ContainerDied}, PodEvent{"u1", "run", ContainerStarted})
	rt.set(map[types.UID]map[string]podstate.ContainerState{"u2": {"x": podstate.StateCreated}})
	h.expect(
		PodEvent{"u1", "dead", ContainerRemoved},
		PodEvent{"u1", "run", ContainerDied},
		PodEvent{"u1", "run", ContainerRemoved},
		PodEvent{"u2", "x", ContainerChanged},
	)
	rt.set(map[types.UID]map[string]podstate.ContainerState{"u2": {"x": podstate.StateRunning}})
	h.expect(PodEvent{"u2", "x", ContainerStarted})
}

func TestListErrorKeepsCache(t *testing.T) {
	rt := newFake()
	rt.set(map[types.UID]map[string]podstate.ContainerState{"u1": {"a": podstate.StateRunning}})
	h := start(t, rt, hour)
	h.expect(PodEvent{"u1", "a", ContainerStarted})
	rt.mu.Lock()
	rt.err, rt.pods = errors.New("containerd down"), nil
	rt.mu.Unlock()
	h.send(runtimeapi.Event{Type: runtimeapi.EventRelist})
	rt.mu.Lock()
	rt.err = nil
	rt.mu.Unlock()
	rt.set(map[types.UID]map[string]podstate.ContainerState{"u1": {"a": podstate.StateRunning}})
	h.send(runtimeapi.Event{Type: runtimeapi.EventRelist})
	h.marker("u2") // a failed list must not have looked like removals
}

func TestGenerate(t *testing.T) {
	if got := generate("u", "c", stateRunning, stateRunning); got != nil {
		t.Fatal(got)
	}
	got := generate("u", "c", stateUnknown, stateNonExistent)
	if len(got) != 2 || got[0].Type != ContainerDied || got[1].Type != ContainerRemoved {
		t.Fatal(got)
	}
}
