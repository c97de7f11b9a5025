package api

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// Watch event types (as the Kubernetes API's).
const (
	WatchAdded    = "ADDED"
	WatchModified = "MODIFIED"
	WatchDeleted  = "DELETED"
	// WatchBookmark ends the initial events of a synced watch.
	WatchBookmark = "BOOKMARK"
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

// PodMetrics is one pod's usage (metrics.k8s.io's PodMetrics, flattened:
// the pod's is the sum of its containers', as kubectl top's).
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

// ErrWatchClosed: the daemon ended a watch (it is stopping).
var ErrWatchClosed = errors.New("watch closed by the daemon")

// WatchPods calls fn with ADDED for every pod, then with each change,
// until ctx is done (nil) or the stream or fn fails. A watch the API
// server ends (its timeout) is resumed from the last resourceVersion seen.
func (c *Client) WatchPods(ctx context.Context, fn func(WatchEvent) error) error {
	opts := metav1.ListOptions{Watch: true, AllowWatchBookmarks: true}
	for {
		w, err := c.core.Get().Resource("pods").VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
		if err != nil {
			if opts.ResourceVersion != "" && ctx.Err() == nil {
				return fmt.Errorf("%w: %w", ErrWatchClosed, c.fromKube(err))
			}
			return c.fromKube(err)
		}
		err = eachPodEvent(ctx, w, func(typ watch.EventType, p *corev1.Pod) error {
			opts.ResourceVersion = p.ResourceVersion
			if typ == watch.Bookmark {
				return nil
			}
			return fn(WatchEvent{Type: string(typ), Object: *p})
		})
		if err != nil || ctx.Err() != nil || opts.ResourceVersion == "" {
			return err
		}
	}
}

// WatchPodsSynced is the Kubernetes API's watch list (sendInitialEvents):
// fn gets the ADDED events of the pods as they are, then one WatchBookmark
// event (the initial-events-end bookmark: the daemon sends it once its
// first manifest snapshot is applied, so these are all its pods), then
// every change. The end of the stream is ErrWatchClosed.
func (c *Client) WatchPodsSynced(ctx context.Context, fn func(WatchEvent) error) error {
	opts := metav1.ListOptions{Watch: true, AllowWatchBookmarks: true, SendInitialEvents: new(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	w, err := c.core.Get().Resource("pods").VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
	if err != nil {
		return c.fromKube(err)
	}
	err = eachPodEvent(ctx, w, func(typ watch.EventType, p *corev1.Pod) error {
		if typ != watch.Bookmark {
			return fn(WatchEvent{Type: string(typ), Object: *p})
		}
		if p.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
			return fn(WatchEvent{Type: WatchBookmark})
		}
		return nil
	})
	if err == nil && ctx.Err() == nil {
		return ErrWatchClosed
	}
	return err
}

// eachPodEvent calls fn with each event of w until it ends (nil), ctx is
// done (nil), fn fails or the server sends an error.
func eachPodEvent(ctx context.Context, w watch.Interface, fn func(watch.EventType, *corev1.Pod) error) error {
	return eachEvent(ctx, w, "pods", fn)
}

// eachEvent is eachPodEvent for objects of type T.
func eachEvent[T runtime.Object](ctx context.Context, w watch.Interface, resource string, fn func(watch.EventType, T) error) error {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			if e.Type == watch.Error {
				return watchError(e.Object)
			}
			o, ok := e.Object.(T)
			if !ok {
				return fmt.Errorf("%s watch: unexpected %T", resource, e.Object)
			}
			if err := fn(e.Type, o); err != nil {
				return err
			}
		}
	}
}

// watchError is an error event's Status as an error.
func watchError(o runtime.Object) error {
	if st, ok := o.(*metav1.Status); ok {
		return fmt.Errorf("watch: %s", st.Message)
	}
	return fmt.Errorf("watch: error event %T", o)
}

// WatchEvents calls fn with the existing events, then each new one (a
// repeated event again, its count raised), until ctx is done (nil) or the
// stream or fn fails.
func (c *Client) WatchEvents(ctx context.Context, namespace, pod string, fn func(ObjectEvent) error) error {
	opts := metav1.ListOptions{Watch: true, FieldSelector: eventSelector(pod)}
	w, err := c.core.Get().Namespace(namespace).Resource("events").VersionedParams(&opts, metav1.ParameterCodec).Watch(ctx)
	if err != nil {
		return c.fromKube(err)
	}
	err = eachEvent(ctx, w, "events", func(typ watch.EventType, e *corev1.Event) error {
		if typ == watch.Deleted || typ == watch.Bookmark {
			return nil
		}
		return fn(objectEvent(e))
	})
	if err == nil && ctx.Err() == nil {
		return ErrWatchClosed
	}
	return err
}

// Top returns the pods' usage (metrics.k8s.io PodMetrics) in namespace
// ("" = all).
func (c *Client) Top(ctx context.Context, namespace string) ([]PodMetrics, error) {
	var l metricsv1beta1.PodMetricsList
	if err := c.fromKube(c.mx.Get().Namespace(namespace).Resource("pods").Do(ctx).Into(&l)); err != nil {
		return nil, err
	}
	out := make([]PodMetrics, 0, len(l.Items))
	for _, pm := range l.Items {
		p := PodMetrics{Namespace: pm.Namespace, Name: pm.Name}
		for _, cm := range pm.Containers {
			m := ContainerMetrics{Name: cm.Name, CPUMillis: cm.Usage.Cpu().MilliValue(), MemoryBytes: cm.Usage.Memory().Value()}
			p.CPUMillis += m.CPUMillis
			p.MemoryBytes += m.MemoryBytes
			p.Containers = append(p.Containers, m)
		}
		out = append(out, p)
	}
	return out, nil
}
