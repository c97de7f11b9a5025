package cli

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/services/api"
)

// observeDaemon adds events and usage to FakeDaemon, in the CLI's shapes.
type observeDaemon struct {
	*clienttest.FakeDaemon
	events []api.ObjectEvent
	top    []api.PodMetrics
	more   *eventFeed // events added while watching
}

// eventFeed holds events a test adds after the watch began.
type eventFeed struct {
	mu     sync.Mutex
	events []api.ObjectEvent
	touch  func()
}

func (f *eventFeed) add(e api.ObjectEvent) {
	f.mu.Lock()
	f.events = append(f.events, e)
	f.mu.Unlock()
	f.touch()
}

// Events are the test's events as the daemon's Kubernetes API lists them.
func (o observeDaemon) Events() []*corev1.Event {
	all := o.events
	if o.more != nil {
		o.more.mu.Lock()
		all = append(append([]api.ObjectEvent{}, all...), o.more.events...)
		o.more.mu.Unlock()
	}
	out := make([]*corev1.Event, 0, len(all))
	for i, e := range all {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Pod}}
		first := e.First
		if first.IsZero() {
			first = e.Time
		}
		ev := clienttest.PodEvent(pod, e.Time, first, max(e.Count, 1), e.Type, e.Reason, e.Message)
		ev.Name = fmt.Sprintf("%s.%d", e.Pod, i)
		out = append(out, ev)
	}
	return out
}

// PodMetrics is the test's usage as metrics.k8s.io's PodMetrics.
func (o observeDaemon) PodMetrics(_ context.Context, ns string) ([]metricsv1beta1.PodMetrics, error) {
	var out []metricsv1beta1.PodMetrics
	for _, p := range o.top {
		if ns != "" && p.Namespace != ns {
			continue
		}
		pm := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
		for _, c := range p.Containers {
			pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(c.CPUMillis, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(c.MemoryBytes, resource.BinarySI)}})
		}
		out = append(out, pm)
	}
	return out, nil
}

func serveObserve(t *testing.T, o observeDaemon) string {
	if o.more != nil {
		o.more.touch = o.Touch
	}
	return clienttest.Serve(t, o)
}

func ipPod(name, ip string) *corev1.Pod {
	p := webPod()
	p.Name, p.Status.PodIP = name, ip
	return p
}

func TestGetTemplates(t *testing.T) {
	sock := serve(t, &clienttest.FakeDaemon{PodList: []*corev1.Pod{ipPod("web", "10.88.0.5"), ipPod("db", "")}, RuntimeStatus: api.RuntimeStatus{Healthy: true}})
	for _, tc := range []struct {
		name, pod, output, want, wantErr string
	}{
		{"jsonpath one pod", "web", "jsonpath={.status.podIP}", "10.88.0.5", ""},
		{"jsonpath list range", "", `jsonpath={range .items[*]}{.metadata.name}={.status.podIP}{"\n"}{end}`, "db=\nweb=10.88.0.5\n", ""},
		{"jsonpath missing key", "web", "jsonpath={.status.nominatedNodeName}", "", ""},
		{"custom columns", "", "custom-columns=NAME:.metadata.name,IP:{.status.podIP},PHASE:status.phase",
			"NAME   IP          PHASE\ndb     <none>      Running\nweb    10.88.0.5   Running\n", ""},
		{"bad jsonpath", "web", "jsonpath={.status", "", "error parsing jsonpath"},
		{"bad columns", "", "custom-columns=NAME", "", "expected <header>:<json-path-expr>"},
		{"unknown format", "", "tmpl={{.}}", "", "allowed formats are: custom-columns,json,jsonpath"},
		{"kubectl's format", "", "go-template={{.}}", "", `podhost has no "-o go-template": run it with kubectl`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := Get(context.Background(), GetOptions{Namespace: "default", Socket: sock, Names: strings.Fields(tc.pod), Output: tc.output}, cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("output:\n%q\nwant\n%q", out.String(), tc.want)
			}
		})
	}
}

func phasePod(uid, name string, phase corev1.PodPhase, started time.Time) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: name, Namespace: "default"}}
	p.Spec.Containers = []corev1.Container{{Name: "c"}}
	p.Status.Phase = phase
	p.Status.StartTime = &metav1.Time{Time: started}
	return p
}

// The watch prints the table, then a line only when a pod's row changes:
// not for an identical row, nor when only AGE moved.
func TestPodWatcherPrintsRowChanges(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add(10 * time.Second)
	var out bytes.Buffer
	o := GetOptions{Namespace: "default"}
	match, err := o.matcher()
	if err != nil {
		t.Fatal(err)
	}
	w := newPodWatcher(printers.NewLineWriter(&out), o, match, func() time.Time { return now })
	w.initial([]corev1.Pod{phasePod("u1", "job", corev1.PodPending, start)})
	w.event(api.WatchEvent{Type: api.WatchAdded, Object: phasePod("u1", "job", corev1.PodPending, start)})
	now = now.Add(time.Minute)
	w.event(api.WatchEvent{Type: api.WatchModified, Object: phasePod("u1", "job", corev1.PodPending, start)})
	running := phasePod("u1", "job", corev1.PodRunning, start)
	running.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	w.event(api.WatchEvent{Type: api.WatchModified, Object: running})
	done := phasePod("u1", "job", corev1.PodSucceeded, start)
	done.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
	w.event(api.WatchEvent{Type: api.WatchModified, Object: done})
	other := phasePod("u2", "elsewhere", corev1.PodRunning, start)
	other.Namespace = "kube-system"
	w.event(api.WatchEvent{Type: api.WatchAdded, Object: other})
	w.event(api.WatchEvent{Type: api.WatchDeleted, Object: done})
	want := "" +
		"NAME   READY   STATUS    RESTARTS   AGE\n" +
		"job    0/1     Pending   0          10s\n" +
		"job    1/1     Running   0          70s\n" +
		"job    0/1     Completed   0          70s\n" +
		"job    0/1     Completed   0          70s\n"
	if out.String() != want {
		t.Errorf("watch output:\n%s\nwant\n%s", out.String(), want)
	}
}

// -l selects pods by label, in the list and in the watch: a pod whose
// labels stop matching prints its last row once, then nothing.
func TestGetLabelSelector(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web, db := phasePod("u1", "web", corev1.PodRunning, start), phasePod("u2", "db", corev1.PodRunning, start)
	web.Labels, db.Labels = map[string]string{"app": "web", "tier": "front"}, map[string]string{"app": "db"}
	for sel, want := range map[string][]string{"app=web": {"web"}, "app in (web,db)": {"web", "db"}, "tier": {"web"}, "!tier": {"db"}, "app!=web,app!=db": nil, "": {"web", "db"}} {
		match, err := GetOptions{Namespace: "default", Selector: sel}.matcher()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range filterPods([]corev1.Pod{web, db}, match) {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("-l %q: %v, want %v", sel, got, want)
		}
	}
	if _, err := (GetOptions{Namespace: "default", Selector: "app in ("}).matcher(); err == nil || !strings.Contains(err.Error(), "label selector") {
		t.Errorf("bad selector: %v", err)
	}
	o := GetOptions{Namespace: "default", Selector: "app=web"}
	match, _ := o.matcher()
	var out bytes.Buffer
	w := newPodWatcher(printers.NewLineWriter(&out), o, match, func() time.Time { return start.Add(10 * time.Second) })
	w.initial(filterPods([]corev1.Pod{web, db}, match))
	w.event(api.WatchEvent{Type: api.WatchModified, Object: db})
	relabelled := *web.DeepCopy()
	relabelled.Labels = map[string]string{"app": "old"}
	w.event(api.WatchEvent{Type: api.WatchModified, Object: relabelled})
	w.event(api.WatchEvent{Type: api.WatchModified, Object: relabelled})
	if lines := strings.Count(out.String(), "\n"); lines != 3 || strings.Contains(out.String(), "db") {
		t.Errorf("watch output:\n%s\nwant the header, web, and web once more when relabelled", out.String())
	}
}

// get -A -w: NAMESPACE first in the header and every line; a change of
// AGE alone (now a column further) prints nothing, a status change a line.
func TestPodWatcherAllNamespaces(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start.Add(10 * time.Second)
	var out bytes.Buffer
	w := newPodWatcher(printers.NewLineWriter(&out), GetOptions{}, func(*corev1.Pod) bool { return true }, func() time.Time { return now })
	job := phasePod("u1", "job", corev1.PodPending, start)
	job.Namespace = "infra"
	w.initial([]corev1.Pod{job})
	now = now.Add(time.Hour)
	w.event(api.WatchEvent{Type: api.WatchModified, Object: job})
	job.Status.Phase = corev1.PodRunning
	w.event(api.WatchEvent{Type: api.WatchModified, Object: job})
	want := "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE\n" +
		"infra       job    0/1     Pending   0          10s\n" +
		"infra       job    0/1     Running   0          60m\n"
	if out.String() != want {
		t.Errorf("watch -A output:\n%s\nwant\n%s", out.String(), want)
	}
}

// With -o wide the watch's header names every cell of its rows.
func TestPodWatcherWideHeader(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	w := newPodWatcher(printers.NewLineWriter(&out), GetOptions{Namespace: "default", Output: "wide"}, func(*corev1.Pod) bool { return true }, func() time.Time { return start })
	w.initial([]corev1.Pod{phasePod("u1", "job", corev1.PodPending, start)})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || len(strings.Fields(lines[0])) != len(strings.Fields(lines[1])) || !strings.HasSuffix(lines[0], "SOURCE") {
		t.Fatalf("wide watch output:\n%s", out.String())
	}
}

func TestEventsTable(t *testing.T) {
	now := time.Now()
	d := observeDaemon{FakeDaemon: &clienttest.FakeDaemon{RuntimeStatus: api.RuntimeStatus{Healthy: true}}, events: []api.ObjectEvent{
		{Namespace: "default", Pod: "web", Event: api.Event{Time: now.Add(-3 * time.Minute), Type: "Normal", Reason: "Pulled", Message: `Container image "busybox" already present on machine`}},
		{Namespace: "default", Pod: "db", Event: api.Event{Time: now.Add(-2 * time.Minute), Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container c"}},
		{Namespace: "other", Pod: "x", Event: api.Event{Time: now.Add(-time.Minute), Type: "Normal", Reason: "Started", Message: "Started container c"}},
	}}
	sock := serveObserve(t, d)
	for _, tc := range []struct {
		name string
		o    EventsOptions
		want string
	}{
		{"namespace", EventsOptions{Namespace: "default"}, "" +
			"LAST SEEN   TYPE      REASON    OBJECT    MESSAGE\n" +
			"3m          Normal    Pulled    pod/web   Container image \"busybox\" already present on machine\n" +
			"2m          Warning   BackOff   pod/db    Back-off restarting failed container c\n"},
		{"for pod", EventsOptions{Namespace: "default", For: "pod/db"}, "" +
			"LAST SEEN   TYPE      REASON    OBJECT   MESSAGE\n" +
			"2m          Warning   BackOff   pod/db   Back-off restarting failed container c\n"},
		{"all namespaces", EventsOptions{AllNamespaces: true, For: "pods/x"}, "" +
			"NAMESPACE   LAST SEEN   TYPE     REASON    OBJECT   MESSAGE\n" +
			"other       60s         Normal   Started   pod/x    Started container c\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Socket = sock
			var out, errOut bytes.Buffer
			if err := Events(context.Background(), tc.o, cmdutil.IOStreams{Out: &out, ErrOut: &errOut}); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("events:\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
	if err := Events(context.Background(), EventsOptions{Socket: sock, For: "deployment/x"}, cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}); err == nil {
		t.Error("--for deployment/x accepted")
	}
}

func TestTopTable(t *testing.T) {
	d := observeDaemon{FakeDaemon: &clienttest.FakeDaemon{RuntimeStatus: api.RuntimeStatus{Healthy: true}}, top: []api.PodMetrics{
		{Namespace: "default", Name: "web", CPUMillis: 12, MemoryBytes: 30 << 20, Containers: []api.ContainerMetrics{
			{Name: "app", CPUMillis: 10, MemoryBytes: 20 << 20}, {Name: "side", CPUMillis: 2, MemoryBytes: 10 << 20}}},
	}}
	sock := serveObserve(t, d)
	for _, tc := range []struct {
		o    TopOptions
		want string
	}{
		{TopOptions{Namespace: "default"}, "NAME   CPU(cores)   MEMORY(bytes)\nweb    12m          30Mi\n"},
		{TopOptions{Namespace: "default", Name: "web", Containers: true},
			"POD   NAME   CPU(cores)   MEMORY(bytes)\nweb   app    10m          20Mi\nweb   side   2m           10Mi\n"},
	} {
		tc.o.Socket = sock
		var out bytes.Buffer
		if err := Top(context.Background(), tc.o, cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}); err != nil {
			t.Fatal(err)
		}
		if out.String() != tc.want {
			t.Errorf("top %+v:\n%s\nwant\n%s", tc.o, out.String(), tc.want)
		}
	}
	// kubectl's NotFound for a pod that does not exist; for one that does
	// but runs no container, podhost says so.
	d.PodList = []*corev1.Pod{webPod()}
	d.PodList[0].Name = "pending"
	for name, want := range map[string]string{
		"gone":    `Error from server (NotFound): podmetrics.metrics.k8s.io "default/gone" not found`,
		"pending": `Error from server (NotFound): podmetrics.metrics.k8s.io "default/pending" not found (the pod is not running)`,
	} {
		err := Top(context.Background(), TopOptions{Socket: sock, Namespace: "default", Name: name}, cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
		if err == nil || err.Error() != want {
			t.Errorf("top pod %s: %v, want %q", name, err, want)
		}
	}
}

func TestLogsSince(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		o       LogsOptions
		want    time.Time
		wantErr string
	}{
		{LogsOptions{}, time.Time{}, ""},
		{LogsOptions{Since: 5 * time.Minute}, now.Add(-5 * time.Minute), ""},
		{LogsOptions{SinceTime: "2026-11-23T11:00:00Z"}, now.Add(-time.Hour), ""},
		{LogsOptions{Since: time.Second, SinceTime: "2026-11-23T11:00:00Z"}, time.Time{}, "at most one of"},
		{LogsOptions{Since: -time.Second}, time.Time{}, "greater than 0"},
		{LogsOptions{SinceTime: "yesterday"}, time.Time{}, "RFC 3339"},
	} {
		got, err := logsSince(tc.o, now)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%+v: err = %v, want %q", tc.o, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("%+v: %v, %v; want %v", tc.o, got, err, tc.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// events -w prints the table, then each new event once (not the ones the
// stream repeats from the list).
func TestEventsWatch(t *testing.T) {
	now := time.Now()
	feed := &eventFeed{}
	d := observeDaemon{FakeDaemon: &clienttest.FakeDaemon{RuntimeStatus: api.RuntimeStatus{Healthy: true}}, more: feed, events: []api.ObjectEvent{
		{Namespace: "default", Pod: "web", Event: api.Event{Time: now.Add(-time.Minute), Type: "Normal", Reason: "Started", Message: "Started container c"}},
	}}
	sock := serveObserve(t, d)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- Events(ctx, EventsOptions{Socket: sock, Namespace: "default", Watch: true}, cmdutil.IOStreams{Out: out, ErrOut: &bytes.Buffer{}})
	}()
	feed.add(api.ObjectEvent{Namespace: "default", Pod: "web", Event: api.Event{Time: now, Type: "Warning", Reason: "Unhealthy", Message: "Liveness probe failed"}})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "Unhealthy") {
		if time.Now().After(deadline) {
			t.Fatalf("new event not printed:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "LAST SEEN") || !strings.Contains(lines[1], "Started") ||
		!regexp.MustCompile(`^0s\s+Warning\s+Unhealthy\s+pod/web\s+Liveness probe failed$`).MatchString(lines[2]) {
		t.Fatalf("events -w output:\n%s", out.String())
	}
}
