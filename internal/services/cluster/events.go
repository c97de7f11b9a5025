package cluster

import (
	"context"

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

// runEvents posts the daemon's events about its pods and its Node to the
// cluster, as the kubelet's event recorder posts its own: through
// client-go's EventBroadcaster, whose correlator aggregates similar events,
// counts repeats of one into a single Event and rate-limits each object's
// events (a burst of 25, then one per 5 minutes), and drops what it cannot
// send after a few retries. A pod's events go to its pod in the cluster:
// the mirror pod of a static pod, the API's pod of a pod from the API
// server (same UID); events about a pod the cluster does not hold (no
// mirror pod yet, or one the API server refuses) are dropped, as the
// kubelet's are when their object is gone.
func (a *Agent) runEvents(ctx context.Context) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	defer b.Shutdown()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: a.client.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventComponent, Host: a.opts.NodeName})
	a.b.WatchEvents(ctx, func(ev *corev1.Event) {
		if ref := a.clusterRef(ev); ref != nil {
			rec.Event(ref, ev.Type, ev.Reason, ev.Message)
		}
	})
}

// clusterRef is the cluster's object a daemon event is about: nil when
// there is none.
func (a *Agent) clusterRef(ev *corev1.Event) *corev1.ObjectReference {
	io := ev.InvolvedObject
	switch io.Kind {
	case "Node":
		// The kubelet's node reference: the node's name as its UID.
		return &corev1.ObjectReference{Kind: "Node", Name: a.opts.NodeName, UID: types.UID(a.opts.NodeName)}
	case "Pod":
		lister := a.getPodLister()
		if lister == nil {
			return nil
		}
		p, err := lister.Pods(io.Namespace).Get(io.Name)
		if err != nil || p.DeletionTimestamp != nil && p.Annotations[AnnotationMirror] != "" {
			return nil
		}
		if _, mirror := p.Annotations[AnnotationMirror]; !mirror && p.UID != io.UID {
			return nil // another pod of the same name
		}
		return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID,
			ResourceVersion: p.ResourceVersion, FieldPath: io.FieldPath}
	}
	return nil
}

func (a *Agent) setPodLister(l listerscorev1.PodLister) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.podLister = l
}

func (a *Agent) getPodLister() listerscorev1.PodLister {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.podLister
}
