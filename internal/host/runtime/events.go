package runtime

import (
	"context"
	"fmt"
	"strconv"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/v2/core/events"
	"github.com/containerd/typeurl/v2"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Event types (runtimeapi.Event*).
const (
	EventExit   = runtimeapi.EventExit
	EventOOM    = runtimeapi.EventOOM
	EventStart  = runtimeapi.EventStart
	EventRelist = runtimeapi.EventRelist
)

// Event is a task event of a container in our namespace (runtimeapi.Event).
type Event = runtimeapi.Event

const (
	resubscribeMin = 200 * time.Millisecond
	resubscribeMax = 5 * time.Second
)

// Events subscribes to /tasks/exit, /tasks/oom and /tasks/start of the
// namespace. When the stream breaks it resubscribes with backoff and then
// sends an EventRelist. The channel is closed when ctx is done. OOM events
// also mark the container (wellknown.LabelOOM) so ListPods reports
// OOMKilled; on an exit the runtime records it and deletes the task
// (reap.go).
func (r *Runtime) Events(ctx context.Context) <-chan Event {
	out := make(chan Event, 64)
	go r.eventLoop(r.nsctx(ctx), out)
	return out
}

func (r *Runtime) eventFilters() []string {
	var f []string
	for _, topic := range []string{"/tasks/exit", "/tasks/oom", "/tasks/start"} {
		f = append(f, fmt.Sprintf("topic==%s,namespace==%s", strconv.Quote(topic), strconv.Quote(r.ns)))
	}
	return f
}

func (r *Runtime) eventLoop(ctx context.Context, out chan<- Event) {
	defer close(out)
	delay := resubscribeMin
	for attempt := 0; ctx.Err() == nil && !r.closed.Load(); attempt++ {
		sctx, cancel := context.WithCancel(ctx)
		ch, errs := r.client.Subscribe(sctx, r.eventFilters()...)
		var err error
		if attempt > 0 {
			err = r.resubscribed(sctx, errs, out)
		}
		if err == nil {
			err = r.pump(sctx, ch, errs, out)
			delay = resubscribeMin
		}
		cancel()
		if ctx.Err() != nil || r.closed.Load() {
			return
		}
		r.log().Warn("containerd event stream broken, resubscribing", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, resubscribeMax)
	}
}

// resubscribed checks that a new subscription is up and containerd serves,
// then asks consumers to relist.
func (r *Runtime) resubscribed(ctx context.Context, errs <-chan error, out chan<- Event) error {
	select {
	case err := <-errs:
		return fmt.Errorf("subscribe: %w", err)
	default:
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	serving, err := r.client.IsServing(hctx)
	cancel()
	if err != nil || !serving {
		return fmt.Errorf("containerd not serving yet: %v", err)
	}
	r.log().Info("containerd event stream re-established; relisting")
	if !send(ctx, out, Event{Type: EventRelist, Time: time.Now()}) {
		return ctx.Err()
	}
	return nil
}

// pump forwards events until the stream fails or ctx is done. Each exit
// is remembered (noteExit) before it is forwarded, so a read its consumers
// make while the task is being deleted reports it, and is reaped in the
// background (reapTask: the exited task deleted, reap.go); nothing waits
// for those reaps when ctx ends (a later list finishes one cut short).
func (r *Runtime) pump(ctx context.Context, ch <-chan *events.Envelope, errs <-chan error, out chan<- Event) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			return err
		case env := <-ch:
			if env == nil {
				continue
			}
			ev, ok := r.convert(ctx, env)
			if ok && ev.Type == EventExit {
				r.exitEvent(ctx, ev)
			}
			if ok && !send(ctx, out, ev) {
				return ctx.Err()
			}
		}
	}
}

func send(ctx context.Context, out chan<- Event, ev Event) bool {
	select {
	case out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// convert maps an envelope to an Event, recording OOMs.
func (r *Runtime) convert(ctx context.Context, env *events.Envelope) (Event, bool) {
	if env.Namespace != r.ns || env.Event == nil {
		return Event{}, false
	}
	v, err := typeurl.UnmarshalAny(env.Event)
	if err != nil {
		r.log().Warn("undecodable containerd event", "topic", env.Topic, "err", err)
		return Event{}, false
	}
	switch e := v.(type) {
	case *apievents.TaskExit:
		if e.ID != "" && e.ID != e.ContainerID {
			return Event{}, false // an exec process
		}
		t := env.Timestamp
		if e.ExitedAt != nil {
			t = e.ExitedAt.AsTime()
		}
		return Event{ContainerID: e.ContainerID, Type: EventExit, ExitCode: e.ExitStatus, Time: t}, true
	case *apievents.TaskOOM:
		r.recordOOM(ctx, e.ContainerID)
		return Event{ContainerID: e.ContainerID, Type: EventOOM, Time: env.Timestamp}, true
	case *apievents.TaskStart:
		return Event{ContainerID: e.ContainerID, Type: EventStart, Time: env.Timestamp}, true
	}
	return Event{}, false
}

// exitEvent remembers the exit of ev, a TaskExit, and reaps its task in
// the background; a new exit ends a failed reap's back-off.
func (r *Runtime) exitEvent(ctx context.Context, ev Event) {
	ex := r.noteExit(ev.ContainerID, exitRecord{Code: int32(ev.ExitCode), At: ev.Time, OOM: r.sawOOM(ev.ContainerID)})
	r.exitMu.Lock()
	delete(r.reapFails, ev.ContainerID)
	r.exitMu.Unlock()
	r.reapTask(ctx, ev.ContainerID, ex, false)
}

// recordOOM remembers an OOM kill in memory and in a container label.
func (r *Runtime) recordOOM(ctx context.Context, id string) {
	r.oomMu.Lock()
	r.oom[id] = true
	r.oomMu.Unlock()
	c, err := r.client.LoadContainer(ctx, id)
	if err == nil {
		_, err = c.SetLabels(ctx, map[string]string{wellknown.LabelOOM: "true"})
	}
	if err != nil {
		r.log().Warn("record OOM kill", "container", id, "err", err)
	}
}

func (r *Runtime) sawOOM(id string) bool {
	r.oomMu.Lock()
	defer r.oomMu.Unlock()
	return r.oom[id]
}

func (r *Runtime) forgetOOM(id string) {
	r.oomMu.Lock()
	delete(r.oom, id)
	r.oomMu.Unlock()
}
