package daemon

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/services/api"
	"github.com/podhost/podhost/internal/services/kubeapi"
	"github.com/podhost/podhost/internal/services/kubeapi/openapi"
	"github.com/podhost/podhost/internal/services/kubeapi/pki"
	"github.com/podhost/podhost/internal/services/kubeapi/stream"
	"github.com/podhost/podhost/internal/version"
)

// kubeBackend adapts the daemon to the kube API server (kubeapi.Backend).
type kubeBackend struct {
	observeBackend
	data      *configdata.Store
	workloads workloadsBackend // kubeapi.Workloads
}

func (b kubeBackend) ConfigMaps() []*corev1.ConfigMap { return b.data.ConfigMaps() }
func (b kubeBackend) Secrets() []*corev1.Secret       { return b.data.Secrets() }

// Changed is closed at the next change of a pod (its status, events or
// desired version), a ConfigMap or a Secret.
func (b kubeBackend) Changed(ctx context.Context) <-chan struct{} {
	st, pods, data := b.st.Changed(), b.mgr.Changed(), b.data.Changed()
	out := make(chan struct{})
	go func() {
		select {
		case <-st:
		case <-pods:
		case <-data:
		case <-ctx.Done():
		}
		close(out)
	}()
	return out
}

// Events: every pod's events as the kubelet's event recorder makes them
// (source kubelet on this node, the pod as the involved object), a
// deleted pod's too until they expire, as the API server keeps them.
func (b kubeBackend) Events() []*corev1.Event {
	var out []*corev1.Event
	pods := b.Pods()
	for _, p := range pods {
		evs, err := b.st.Events(p.UID)
		if err != nil {
			continue
		}
		out = b.kubeEvents(out, records.PodEvents{UID: p.UID, Namespace: p.Namespace, Name: p.Name, Events: evs})
	}
	for _, pe := range b.deletedPodEvents("", pods) {
		out = b.kubeEvents(out, pe)
	}
	return out
}

// kubeEvents appends pe's events as core/v1 Events.
func (b kubeBackend) kubeEvents(out []*corev1.Event, pe records.PodEvents) []*corev1.Event {
	node := b.views.node
	seen := map[string]bool{}
	for _, e := range pe.Events {
		first := e.First
		if first.IsZero() {
			first = e.Time
		}
		// Named after its first occurrence, as the recorder names it: a
		// repeat updates the same event.
		name := fmt.Sprintf("%s.%x", pe.Name, first.UnixNano())
		for i := 1; seen[name]; i++ {
			name = fmt.Sprintf("%s.%x%d", pe.Name, first.UnixNano(), i)
		}
		seen[name] = true
		t := metav1.NewTime(first)
		out = append(out, &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pe.Namespace, CreationTimestamp: t},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pe.Namespace,
				Name: pe.Name, UID: pe.UID},
			Reason: e.Reason, Message: e.Message, Type: e.Type, Count: max(e.Count, 1), FirstTimestamp: t, LastTimestamp: metav1.NewTime(e.Time),
			Source:              corev1.EventSource{Component: "kubelet", Host: node},
			ReportingController: "kubelet", ReportingInstance: node,
		})
	}
	return out
}

// Logs streams a container's log with the kubelet's PodLogOptions.
func (b kubeBackend) Logs(ctx context.Context, pod *corev1.Pod, opts *corev1.PodLogOptions, w io.Writer) error {
	req := api.LogRequest{Namespace: pod.Namespace, Name: pod.Name, Container: opts.Container, Follow: opts.Follow,
		Previous: opts.Previous, Timestamps: opts.Timestamps, Tail: -1}
	if opts.TailLines != nil {
		req.Tail = int(*opts.TailLines)
	}
	switch {
	case opts.SinceTime != nil:
		req.Since = opts.SinceTime.Time
	case opts.SinceSeconds != nil:
		req.Since = time.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	err := b.logsTo(ctx, req, w, nil)
	var st apierrors.APIStatus
	if err != nil && ctx.Err() == nil && !errors.As(err, &st) {
		// The kubelet's words, as the API server answers them: a bad request.
		return apierrors.NewBadRequest(err.Error())
	}
	return err
}

// PodsWarning is what every reader of pods is told (Warning headers):
// containerd unreachable, the state db not writable.
func (b kubeBackend) PodsWarning() string { return b.Runtime().Warning() }

// PodMetrics is metrics.k8s.io's view of kubectl top's sample (a 1 s CPU
// rate, the working set).
func (b kubeBackend) PodMetrics(ctx context.Context, namespace string) ([]metricsv1beta1.PodMetrics, error) {
	start := time.Now()
	tops, err := b.Top(ctx, namespace, time.Second)
	if err != nil {
		return nil, err
	}
	labels := map[string]map[string]string{}
	for _, p := range b.Pods() {
		labels[p.Namespace+"/"+p.Name] = p.Labels
	}
	out := make([]metricsv1beta1.PodMetrics, 0, len(tops))
	for _, t := range tops {
		pm := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: t.Name, Namespace: t.Namespace,
			Labels: labels[t.Namespace+"/"+t.Name], CreationTimestamp: metav1.Now()},
			Timestamp: metav1.NewTime(start), Window: metav1.Duration{Duration: time.Second}}
		for _, c := range t.Containers {
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: usage(c.CPUMillis, c.MemoryBytes)})
		}
		out = append(out, pm)
	}
	return out, nil
}

func usage(cpuMillis, memBytes int64) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpuMillis, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memBytes, resource.BinarySI)}
}

// NodeMetrics: the machine's CPU rate over 1 s (/proc/stat) and its
// memory in use (MemTotal - MemAvailable), as metrics-server reports a
// node's.
func (b kubeBackend) NodeMetrics(ctx context.Context) (*metricsv1beta1.NodeMetrics, error) {
	n, err := b.Node(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	before, err := cpuTicks()
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Second):
	}
	after, err := cpuTicks()
	if err != nil {
		return nil, err
	}
	const userHZ = 100 // USER_HZ, fixed by the kernel ABI
	millis := int64(float64(after-before) / userHZ / time.Since(start).Seconds() * 1000)
	mem, err := memoryInUse()
	if err != nil {
		return nil, err
	}
	return &metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.Now()},
		Timestamp: metav1.NewTime(start), Window: metav1.Duration{Duration: time.Second}, Usage: usage(millis, mem)}, nil
}

// cpuTicks: the busy ticks of all CPUs (every /proc/stat cpu field but idle
// and iowait).
func cpuTicks() (uint64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy uint64
	for i, v := range f[1:8] {
		n, _ := strconv.ParseUint(v, 10, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, nil
}

func memoryInUse() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	vals := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			vals[k] = n << 10
		}
	}
	return vals["MemTotal"] - vals["MemAvailable"], sc.Err()
}

// startKubeAPI serves the Kubernetes API on the API socket and, with
// kubeAPIAddress set, on TCP over TLS (client certificates of the PKI
// under the state dir). A TCP address that cannot be bound is logged:
// the daemon, the socket and the pods go on without it.
func (d *daemon) startKubeAPI(ctx context.Context, g *errgroup.Group, b *backend, srv *api.Server) {
	kb := kubeBackend{observeBackend: observeBackend{backend: b, metrics: d.metrics, stats: d.cg}, data: d.data, workloads: workloadsBackend{d.rolling}}
	streams := stream.New(b.StreamRuntime(), d.log.With("component", "kube-api-streams"), stream.Options{})
	kube := kubeapi.New(kb, d.kubeStore(b), streams, kubeapi.Options{Version: version.Version,
		Logger: d.log.With("component", "kube-api"), OpenAPI: openapi.Handler(), TypeConverter: openapi.TypeConverter})
	g.Go(func() error { kube.Run(ctx); return streams.Close() })
	srv.Mount(kube.Handler(), "/api", "/api/", "/apis", "/apis/", "GET /version", "/openapi/")
	if d.cfg.KubeAPIAddress == "" {
		return
	}
	p, err := pki.Ensure(filepath.Join(d.cfg.StateDir, "pki"), servingHosts(d.cfg.KubeAPIAddress), time.Now())
	if err != nil {
		d.log.Error("kube api: certificates; the TCP listener is off", "err", err)
		return
	}
	g.Go(func() error {
		if err := kubeapi.ServeTLS(ctx, d.cfg.KubeAPIAddress, p, kube.Handler(), d.log); err != nil {
			d.log.Error("kube api: the TCP listener is off", "address", d.cfg.KubeAPIAddress, "err", err)
		}
		return nil
	})
}

// servingHosts: the names and addresses a client may reach the listener
// by: localhost, the host name, every address of the host, the listen
// address's host.
func servingHosts(addr string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	if ifaddrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range ifaddrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() {
				hosts = append(hosts, ipn.IP.String())
			}
		}
	}
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}
