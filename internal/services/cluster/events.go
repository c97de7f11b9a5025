package cluster

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventComponent is the source component of the events podhost posts to
// the cluster (the kubelet's is "kubelet").
const EventComponent = "podhost"

// Events about a pod whose pod the cluster does not hold yet (a static
// pod's first events come before its mirror pod is created) wait for it:
// at most maxPendingEvents of them, for pendingEventsFor, looked at again
// every pendingEventsRetry.
const (
	maxPendingEvents   = 256
	pendingEventsFor   = 30 * time.Second
	pendingEventsRetry = time.Second
)

// runEvents posts the daemon's events about its pods and its Node to the
// cluster, as the kubelet's event recorder posts its own: through
// client-go's EventBroadcaster, whose correlator aggregates similar events,
// counts repeats of one into a single Event and rate-limits each object's
// events (a burst of 25, then one per 5 minutes), and drops what it cannot
// send after a few retries. A pod's events go to its pod in the cluster:
// the mirror pod of a static pod, the API's pod of a pod from the API
// server (same UID). Those about a pod the cluster does not hold yet wait
// for it (maxPendingEvents, pendingEventsFor); those about another pod of
// the same name, or a pod that never shows (one the API server refuses as
// a mirror pod), are dropped, as the kubelet's are when their object is
// gone.
func (a *Agent) runEvents(ctx context.Context) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	defer b.Shutdown()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.client.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventComponent, Host: a.opts.NodeName})
	events := make(chan *corev1.Event)
	go a.b.WatchEvents(ctx, func(ev *corev1.Event) {
		select {
		case events <- ev:
		case <-ctx.Done():
		}
	})
	var pending []pendingEvent
	t := time.NewTicker(pendingEventsRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			if !a.recordEvent(rec, ev) && len(pending) < maxPendingEvents {
				pending = append(pending, pendingEvent{ev: ev, since: time.Now()})
			}
		case now := <-t.C:
			pending = slices.DeleteFunc(pending, func(p pendingEvent) bool {
				return a.recordEvent(rec, p.ev) || now.Sub(p.since) > pendingEventsFor
			})
		}
	}
}

type pendingEvent struct {
	ev    *corev1.Event
	since time.Time
}

// recordEvent records ev on its object in the cluster; false when it is
// about a pod the cluster does not hold yet (retry later).
func (a *Agent) recordEvent(rec record.EventRecorder, ev *corev1.Event) bool {
	ref, wait := a.clusterRef(ev)
	if ref != nil {
		rec.Event(ref, ev.Type, ev.Reason, ev.Message)
	}
	return !wait
}

// clusterRef is the cluster's object a daemon event is about: nil when
// there is none, wait when it is a pod the cluster may hold soon.
func (a *Agent) clusterRef(ev *corev1.Event) (ref *corev1.ObjectReference, wait bool) {
	io := ev.InvolvedObject
	switch io.Kind {
	case "Node":
		// The kubelet's node reference: the node's name as its UID.
		return &corev1.ObjectReference{Kind: "Node", Name: a.opts.NodeName, UID: types.UID(a.opts.NodeName)}, false
	case "Pod":
		lister := a.getPodLister()
		if lister == nil {
			return nil, true
		}
		p, err := lister.Pods(io.Namespace).Get(io.Name)
		if err != nil {
			return nil, true
		}
		_, mirror := p.Annotations[AnnotationMirror]
		if mirror && p.DeletionTimestamp != nil { // a mirror pod about to be made again
			return nil, true
		}
		if !mirror && p.UID != io.UID {
			return nil, false // another pod of the same name
		}
		return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID,
			ResourceVersion: p.ResourceVersion, FieldPath: io.FieldPath}, false
	}
	return nil, false
}

func (a *Agent) setPodLister(l listerscorev1.PodLister) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.podLister = l
}

// ClusterPod is the cluster's pod namespace/name bound to this node (nil:
// none), from the agent's watch of them; known is false until that watch
// synced.
func (a *Agent) ClusterPod(namespace, name string) (pod *corev1.Pod, known bool) {
	l := a.getPodLister()
	if l == nil {
		return nil, false
	}
	p, err := l.Pods(namespace).Get(name)
	if err != nil {
		return nil, true
	}
	return p, true
}

func (a *Agent) getPodLister() listerscorev1.PodLister {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.podLister
}
