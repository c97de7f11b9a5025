package api

import (
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The client's reads of the Kubernetes API on the socket.

// kubeScheme is the kinds the client decodes (built at first use: the
// daemon links this package too and pays nothing at start).
var kubeScheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(metricsv1beta1.AddToScheme(s))
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
})

func (c *Client) restClients() (core, mx *rest.RESTClient) {
	codecs := serializer.NewCodecFactory(kubeScheme())
	rc := func(apiPath string, gv schema.GroupVersion) *rest.RESTClient {
		cfg := rest.CopyConfig(c.cfg)
		cfg.APIPath, cfg.GroupVersion = apiPath, &gv
		cfg.NegotiatedSerializer = codecs.WithoutConversion()
		cl, err := rest.RESTClientForConfigAndClient(cfg, c.hc)
		utilruntime.Must(err) // only a config without a serializer or version fails
		return cl
	}
	return rc("/api", corev1.SchemeGroupVersion), rc("/apis", metricsv1beta1.SchemeGroupVersion)
}

func (c *Client) params() runtime.ParameterCodec { return runtime.NewParameterCodec(kubeScheme()) }

// ListPods returns every pod with its status.
func (c *Client) ListPods(ctx context.Context) (*corev1.PodList, error) {
	var l corev1.PodList
	return &l, c.fromKube(c.core.Get().Resource("pods").Do(ctx).Into(&l))
}

// GetPod returns one pod.
func (c *Client) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	return &p, c.fromKube(c.core.Get().Namespace(namespace).Resource("pods").Name(name).Do(ctx).Into(&p))
}

// Node returns this machine as a core/v1 Node: the one node the API lists.
func (c *Client) Node(ctx context.Context) (*corev1.Node, error) {
	var l corev1.NodeList
	if err := c.fromKube(c.core.Get().Resource("nodes").Do(ctx).Into(&l)); err != nil {
		return nil, err
	}
	if len(l.Items) == 0 {
		return nil, errors.New("node: the daemon lists no node")
	}
	return &l.Items[0], nil
}

// Events returns a pod's events, oldest first (by last occurrence).
func (c *Client) Events(ctx context.Context, namespace, name string) ([]Event, error) {
	evs, err := c.AllEvents(ctx, namespace, name)
	out := make([]Event, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Event)
	}
	return out, err
}

// AllEvents returns the events of the pods in namespace ("" = all), only
// those of pod when it is given, oldest first (by last occurrence).
func (c *Client) AllEvents(ctx context.Context, namespace, pod string) ([]ObjectEvent, error) {
	var l corev1.EventList
	err := c.fromKube(c.core.Get().Namespace(namespace).Resource("events").
		VersionedParams(&metav1.ListOptions{FieldSelector: eventSelector(pod)}, metav1.ParameterCodec).Do(ctx).Into(&l))
	if err != nil {
		return nil, err
	}
	out := make([]ObjectEvent, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, objectEvent(&l.Items[i]))
	}
	slices.SortStableFunc(out, func(a, b ObjectEvent) int { return cmp.Or(a.Time.Compare(b.Time), a.First.Compare(b.First)) })
	return out, nil
}

// eventSelector selects pods' events (one pod's when it is given) by
// their involved object, as kubectl describe and kubectl events do.
func eventSelector(pod string) string {
	sel := "involvedObject.kind=Pod"
	if pod != "" {
		sel += ",involvedObject.name=" + pod
	}
	return sel
}

// objectEvent is a core/v1 Event as the CLI shows it.
func objectEvent(e *corev1.Event) ObjectEvent {
	last, first := e.LastTimestamp.Time, e.FirstTimestamp.Time
	if last.IsZero() {
		last = e.EventTime.Time
	}
	return ObjectEvent{Namespace: e.InvolvedObject.Namespace, Pod: e.InvolvedObject.Name,
		Event: Event{Time: last, First: first, Count: e.Count, Type: e.Type, Reason: e.Reason, Message: e.Message}}
}

// Logs copies a container log to w (pods/log).
func (c *Client) Logs(ctx context.Context, req LogRequest, w io.Writer) error {
	opts := &corev1.PodLogOptions{Container: req.Container, Follow: req.Follow, Previous: req.Previous, Timestamps: req.Timestamps}
	if req.Tail >= 0 {
		opts.TailLines = new(int64(req.Tail))
	}
	if !req.Since.IsZero() {
		opts.SinceTime = &metav1.Time{Time: req.Since.Truncate(time.Second)}
	}
	rc, err := c.core.Get().Namespace(req.Namespace).Resource("pods").Name(req.Name).SubResource("log").
		VersionedParams(opts, c.params()).Stream(ctx)
	if err != nil {
		return c.fromKube(err)
	}
	defer rc.Close()
	_, err = io.Copy(w, rc)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
