package rolling

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
)

// Statuses is the status manager (*status.Manager): the pods' readiness.
type Statuses interface {
	Status(uid types.UID) (corev1.PodStatus, bool)
	Changed() <-chan struct{}
}

// Controller applies Plan to every workload of each snapshot, again at
// each status change while a rollout is under way.
type Controller struct {
	now   func() time.Time
	st    Statuses
	log   *slog.Logger
	state map[string]State // by workload key (kind namespace/name)
}

// New returns a Controller reading readiness from st.
func New(st Statuses, log *slog.Logger) *Controller {
	if log == nil {
		log = slog.Default()
	}
	return &Controller{now: time.Now, st: st, log: log.With("component", "rolling"), state: map[string]State{}}
}

// Run passes every snapshot of in on to out with the workloads' pods as
// Plan has them, and passes the last one on again when a status change
// moves a rollout on, until ctx is done or in is closed.
func (c *Controller) Run(ctx context.Context, in <-chan source.Snapshot, out chan<- source.Snapshot) {
	var last *source.Snapshot
	var sent string
	fresh := false
	for {
		changed := c.st.Changed()
		if last != nil {
			snap, rolling := c.Step(*last)
			if sig := signature(snap.Pods); fresh || sig != sent {
				select {
				case out <- snap:
				case <-ctx.Done():
					return
				}
				sent, fresh = sig, false
			}
			if !rolling {
				changed = nil // nothing to follow until the next snapshot
			}
		}
		var tick <-chan time.Time // minReadySeconds pass without a status change
		if changed != nil {
			tick = time.After(time.Second)
		}
		select {
		case s, ok := <-in:
			if !ok {
				return
			}
			last, fresh = &s, true
		case <-changed:
		case <-tick:
		case <-ctx.Done():
			return
		}
	}
}

// Step is snap with each workload's pods as Plan has them now; rolling
// reports whether a rollout is still under way.
func (c *Controller) Step(snap source.Snapshot) (source.Snapshot, bool) {
	inSnap := map[types.UID]bool{}
	for _, p := range snap.Pods {
		inSnap[p.UID] = true
	}
	next := map[string]State{}
	drop := map[types.UID]bool{}
	var hold []*corev1.Pod
	rolling := false
	for _, w := range snap.Workloads {
		key := w.Kind + " " + w.Meta().Namespace + "/" + w.Meta().Name
		st := Plan(w, c.state[key], c)
		next[key] = st
		passed := map[types.UID]bool{}
		for _, p := range st.Pods {
			passed[p.UID] = true
			if !inSnap[p.UID] {
				hold = append(hold, p) // an old revision's pod, still running
			}
		}
		for _, p := range w.Pods {
			if !passed[p.UID] {
				drop[p.UID] = true
			}
		}
		if len(hold) > 0 || len(st.Leaving) > 0 || len(st.Pods) != len(w.Pods) {
			rolling = true
			c.log.Debug("rollout under way", "workload", key, "passed", len(st.Pods), "want", len(w.Pods), "leaving", len(st.Leaving))
		}
	}
	c.state = next
	if len(drop) == 0 && len(hold) == 0 {
		return snap, rolling
	}
	out := snap
	out.Pods = slices.DeleteFunc(slices.Clone(snap.Pods), func(p *corev1.Pod) bool { return drop[p.UID] })
	out.Pods = append(out.Pods, hold...)
	return out, rolling
}

// ReadyFor implements Pods: since the pod's Ready condition turned True.
func (c *Controller) ReadyFor(uid types.UID) (time.Duration, bool) {
	st, ok := c.st.Status(uid)
	if !ok {
		return 0, false
	}
	for _, cond := range st.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
			return c.now().Sub(cond.LastTransitionTime.Time), true
		}
	}
	return 0, false
}

// Gone implements Pods: the status manager no longer tracks the pod.
func (c *Controller) Gone(uid types.UID) bool {
	_, ok := c.st.Status(uid)
	return !ok
}

// signature identifies a set of pods: their UIDs and hashes.
func signature(pods []*corev1.Pod) string {
	keys := make([]string, 0, len(pods))
	for _, p := range pods {
		keys = append(keys, string(p.UID)+"="+manifest.Hash(p))
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
