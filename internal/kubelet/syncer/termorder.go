package syncer

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
)

// stopPodContainers stops a pod's running containers as the kubelet's
// killContainersWithSyncResult: every one in its own goroutine at once, each
// recording its Killing event and running its preStop hook at t=0, then
// waiting for its turn in the termination order (termOrder) within what is
// left of grace, then getting the stop signal with what is left, at least
// minStopGrace (killContainer). It returns once every stop has ended.
func (s *Syncer) stopPodContainers(ctx context.Context, pod *corev1.Pod, cs []*podstate.Container, grace time.Duration) error {
	ord := newTermOrder(pod, cs)
	return eachInParallel(cs, func(c *podstate.Container) error {
		return s.stopInOrder(ctx, pod, c, grace, ord)
	})
}

// stopInOrder stops c (its turn waited for inside the stop op) and tells
// ord when the stop has ended, whether or not ctx ended first: the stop op
// outlives a cancelled sync, and the containers that wait for c wait for
// its op, not for this sync.
func (s *Syncer) stopInOrder(ctx context.Context, pod *corev1.Pod, c *podstate.Container, grace time.Duration, ord *termOrder) error {
	res := make(chan error, 1)
	go func() {
		err := s.stopContainerInTurn(context.WithoutCancel(ctx), pod, c, grace, "Stopping container "+c.Name,
			func(opCtx context.Context, left time.Duration) time.Duration {
				return ord.waitForTurn(opCtx, s, c.Name, left)
			})
		if err == nil {
			ord.terminated(c.Name)
		}
		res <- err
	}()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// termOrder is the kubelet's terminationOrdering
// (kuberuntime_termination_order.go): a sidecar waits for every app
// container and for the next sidecar declared after it; app containers
// and regular init containers wait for nothing. A container that is not
// running is never waited for.
type termOrder struct {
	mu     sync.Mutex
	done   map[string]chan struct{}
	prereq map[string][]chan struct{}
}

// newTermOrder builds the order of pod's containers, cs the running ones.
// A nil pod (an orphan) has no order: every container stops at once.
func newTermOrder(pod *corev1.Pod, cs []*podstate.Container) *termOrder {
	o := &termOrder{done: map[string]chan struct{}{}, prereq: map[string][]chan struct{}{}}
	if pod == nil {
		return o
	}
	running := map[string]bool{}
	for _, c := range cs {
		running[c.Name] = true
	}
	channel := func(name string) chan struct{} {
		ch := make(chan struct{})
		if !running[name] {
			close(ch)
		}
		o.done[name] = ch
		return ch
	}
	var mains []chan struct{}
	for _, c := range pod.Spec.Containers {
		mains = append(mains, channel(c.Name))
	}
	var later chan struct{}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		ic := &pod.Spec.InitContainers[i]
		ch := channel(ic.Name)
		if !qos.IsRestartable(ic) {
			continue
		}
		o.prereq[ic.Name] = append(o.prereq[ic.Name], mains...)
		if later != nil {
			o.prereq[ic.Name] = append(o.prereq[ic.Name], later)
		}
		later = ch
	}
	return o
}

// waitForTurn waits until every container name waits for has stopped, or
// for left (the grace period it has left; none when left <= 0), or until
// ctx (the stop op's: ended when the syncer closes) is done, and returns
// how long it waited (on s's clock).
func (o *termOrder) waitForTurn(ctx context.Context, s *Syncer, name string, left time.Duration) time.Duration {
	if left <= 0 || len(o.prereq[name]) == 0 {
		return 0
	}
	start := s.clock.Now()
	timeout := s.clock.After(left)
	for _, ch := range o.prereq[name] {
		select {
		case <-ch:
		case <-timeout:
			return s.clock.Since(start)
		case <-ctx.Done():
			return s.clock.Since(start)
		}
	}
	return s.clock.Since(start)
}

// terminated records that container name has stopped.
func (o *termOrder) terminated(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.done[name]; ok {
		close(ch)
		delete(o.done, name)
	}
}
