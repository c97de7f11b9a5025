package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// logsDaemon serves fixed pods and answers each log request with write's
// output, recording the requests.
type logsDaemon struct {
	*clienttest.FakeDaemon
	write func(ctx context.Context, req api.LogRequest, w io.Writer) error

	mu   sync.Mutex
	reqs []api.LogRequest
}

func (d *logsDaemon) Logs(ctx context.Context, pod *corev1.Pod, opts *corev1.PodLogOptions, w io.Writer) error {
	req := api.LogRequest{Namespace: pod.Namespace, Name: pod.Name, Container: opts.Container, Follow: opts.Follow,
		Previous: opts.Previous, Timestamps: opts.Timestamps, Tail: -1}
	if opts.TailLines != nil {
		req.Tail = int(*opts.TailLines)
	}
	if opts.SinceTime != nil {
		req.Since = opts.SinceTime.Time
	}
	d.mu.Lock()
	d.reqs = append(d.reqs, req)
	d.mu.Unlock()
	if d.write != nil {
		return d.write(ctx, req, w)
	}
	fmt.Fprintf(w, "%s says hi\n", req.Container)
	return nil
}

// streams is the pod/container of each request, in order.
func (d *logsDaemon) streams() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, r := range d.reqs {
		out = append(out, r.Name+"/"+r.Container)
	}
	return out
}

// multiPod is a pod with an init container and two containers.
func multiPod(name string, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.Name, p.Labels = "default", name, labels
	p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "img"}}
	p.Spec.Containers = []corev1.Container{{Name: "app", Image: "img"}, {Name: "side", Image: "img"}}
	return p
}

func runLogs(t *testing.T, d *logsDaemon, o LogsOptions) (string, string, error) {
	t.Helper()
	d.RuntimeStatus = api.RuntimeStatus{Healthy: true}
	o.Socket = serve(t, d)
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	var out, errOut bytes.Buffer
	err := Logs(context.Background(), o, cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), err
}

// --all-containers prints init containers first, one after another;
// --prefix names each line's pod and container.
func TestLogsAllContainers(t *testing.T) {
	for _, tc := range []struct {
		o    LogsOptions
		want string
	}{
		{LogsOptions{Name: "web", AllContainers: true}, "setup says hi\napp says hi\nside says hi\n"},
		{LogsOptions{Name: "web", AllContainers: true, Prefix: true},
			"[pod/web/setup] setup says hi\n[pod/web/app] app says hi\n[pod/web/side] side says hi\n"},
		{LogsOptions{Name: "web", Container: "side", Prefix: true}, "[pod/web/side] side says hi\n"},
	} {
		d := &logsDaemon{FakeDaemon: &clienttest.FakeDaemon{PodList: []*corev1.Pod{multiPod("web", nil)}}}
		out, _, err := runLogs(t, d, tc.o)
		if err != nil || out != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc.o, out, err, tc.want)
		}
	}
}

// Refused flag combinations name the flag and reach no log.
func TestLogsRefused(t *testing.T) {
	pods := []*corev1.Pod{multiPod("web", map[string]string{"app": "web"}), multiPod("web2", map[string]string{"app": "web"})}
	for _, tc := range []struct {
		o    LogsOptions
		want string
	}{
		{LogsOptions{Name: "web", AllContainers: true, Container: "app"}, "--all-containers=true should not be specified with container name app"},
		{LogsOptions{Name: "web", Selector: "app=web"}, "only a selector (-l) or a POD name is allowed"},
		{LogsOptions{}, "NAME or -l/--selector is required"},
		{LogsOptions{Selector: "app in ("}, "-l/--selector: unable to parse"},
		{LogsOptions{Selector: "app=web", Container: "nope"}, "container nope is not valid for pod web out of: setup, app, side"},
		{LogsOptions{Name: "web", AllContainers: true, Follow: true, MaxLogRequests: 2},
			"you are attempting to follow 3 log streams, but maximum allowed concurrency is 2, use --max-log-requests to increase the limit"},
		{LogsOptions{Selector: "app=web", AllContainers: true, Follow: true},
			"you are attempting to follow 6 log streams, but maximum allowed concurrency is 5, use --max-log-requests to increase the limit"},
	} {
		d := &logsDaemon{FakeDaemon: &clienttest.FakeDaemon{PodList: pods}}
		_, _, err := runLogs(t, d, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
		if got := d.streams(); got != nil {
			t.Errorf("%+v: log requests %v, want none", tc.o, got)
		}
	}
}

// -l reads the default container of each matching pod, by name, with
// kubectl's --tail default of 10; no match is not an error.
func TestLogsSelector(t *testing.T) {
	db := webPod()
	db.Name, db.Labels = "db", map[string]string{"app": "db"}
	b := multiPod("web-b", map[string]string{"app": "web"})
	a := multiPod("web-a", map[string]string{"app": "web"})
	a.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "side"}
	other := multiPod("web-c", map[string]string{"app": "web"})
	other.Namespace = "prod"
	pods := []*corev1.Pod{db, b, a, other}
	for _, tc := range []struct {
		o        LogsOptions
		streams  []string
		tail     int
		out, err string
	}{
		{LogsOptions{Selector: "app=web"}, []string{"web-a/side", "web-b/app"}, 10, "side says hi\napp says hi\n",
			`Defaulted container "app" out of: app, side, setup (init)` + "\n"},
		{LogsOptions{Selector: "app=web", Tail: -1, TailSet: true, Container: "setup", Prefix: true}, []string{"web-a/setup", "web-b/setup"}, -1,
			"[pod/web-a/setup] setup says hi\n[pod/web-b/setup] setup says hi\n", ""},
		{LogsOptions{Selector: "app=web", Tail: 3, TailSet: true, AllContainers: true, Namespace: "prod"}, []string{"web-c/setup", "web-c/app", "web-c/side"}, 3,
			"setup says hi\napp says hi\nside says hi\n", ""},
		{LogsOptions{Selector: "app=nothing"}, nil, 0, "", "No resources found in default namespace.\n"},
	} {
		d := &logsDaemon{FakeDaemon: &clienttest.FakeDaemon{PodList: pods}}
		out, errOut, err := runLogs(t, d, tc.o)
		if err != nil || out != tc.out || errOut != tc.err {
			t.Errorf("%+v: %q, %q, %v; want %q, %q", tc.o, out, errOut, err, tc.out, tc.err)
		}
		if got := d.streams(); !slices.Equal(got, tc.streams) {
			t.Errorf("%+v: streams %v, want %v", tc.o, got, tc.streams)
		}
		for _, r := range d.reqs {
			if r.Tail != tc.tail {
				t.Errorf("%+v: tail %d, want %d", tc.o, r.Tail, tc.tail)
			}
		}
	}
}

// Streams followed at once print whole lines even when their writes end
// mid-line.
func TestLogsFollowKeepsLinesWhole(t *testing.T) {
	const lines = 200
	write := func(_ context.Context, req api.LogRequest, w io.Writer) error {
		if !req.Follow {
			t.Errorf("%s: not followed", req.Container)
		}
		for i := range lines {
			line := fmt.Sprintf("%s line %d of a log\n", req.Container, i)
			for part := range strings.SplitAfterSeq(line, " ") { // partial lines
				_, _ = w.Write([]byte(part))
			}
		}
		return nil
	}
	for _, prefix := range []bool{false, true} {
		d := &logsDaemon{FakeDaemon: &clienttest.FakeDaemon{PodList: []*corev1.Pod{multiPod("web", nil)}}, write: write}
		out, _, err := runLogs(t, d, LogsOptions{Name: "web", AllContainers: true, Follow: true, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) != 3*lines {
			t.Errorf("prefix %v: %d lines, want %d", prefix, len(got), 3*lines)
		}
		next := map[string]int{}
		for _, l := range got {
			var c string
			var i int
			if prefix {
				var pc string
				if _, err := fmt.Sscanf(l, "[pod/web/%s %s line %d of a log", &pc, &c, &i); err != nil || pc != c+"]" {
					t.Fatalf("prefix %v: mixed line %q", prefix, l)
				}
			} else if _, err := fmt.Sscanf(l, "%s line %d of a log", &c, &i); err != nil || !strings.HasSuffix(l, " of a log") {
				t.Fatalf("prefix %v: mixed line %q", prefix, l)
			}
			if i != next[c] {
				t.Fatalf("prefix %v: %q after line %d of %s", prefix, l, next[c]-1, c)
			}
			next[c]++
		}
	}
}

// A stream that fails (e.g. a container the pod no longer has) ends the others: the
// error is the command's, as kubectl's, and nothing hangs.
func TestLogsFollowStopsAtFirstError(t *testing.T) {
	write := func(ctx context.Context, req api.LogRequest, w io.Writer) error {
		if req.Container == "side" {
			return fmt.Errorf("container %q in pod %q is waiting to start", req.Container, req.Name)
		}
		fmt.Fprintf(w, "%s up\n", req.Container)
		<-ctx.Done() // following until the client goes
		return nil
	}
	d := &logsDaemon{FakeDaemon: &clienttest.FakeDaemon{PodList: []*corev1.Pod{multiPod("web", nil)}}, write: write}
	_, _, err := runLogs(t, d, LogsOptions{Name: "web", AllContainers: true, Follow: true})
	if err == nil || !strings.Contains(err.Error(), `container "side" in pod "web" is waiting to start`) {
		t.Errorf("got %v, want side's error", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stdout closed") }

// A write that fails (stdout gone) ends the command with that error.
func TestLogsStopsWhenOutputFails(t *testing.T) {
	d := &logsDaemon{FakeDaemon: &clienttest.FakeDaemon{PodList: []*corev1.Pod{multiPod("web", nil)}}}
	d.RuntimeStatus = api.RuntimeStatus{Healthy: true}
	o := LogsOptions{Socket: serve(t, d), Namespace: "default", Name: "web", AllContainers: true, Prefix: true}
	err := Logs(context.Background(), o, cmdutil.IOStreams{Out: failingWriter{}, ErrOut: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "stdout closed") {
		t.Fatalf("Logs = %v, want the write error", err)
	}
	if got := d.streams(); len(got) != 1 {
		t.Fatalf("log requests %v, want the first only", got)
	}
}

// A line longer than maxPrefixedLine is printed in prefixed pieces rather
// than held whole.
func TestPrefixedLongLineIsBounded(t *testing.T) {
	var b bytes.Buffer
	w := &lineWriterTo{out: &lineOut{w: &b}, prefix: "[p] "}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for range 40 { // 2.5 MiB without a newline
		if _, err := w.Write(chunk); err != nil {
			t.Fatal(err)
		}
		if len(w.buf) > maxPrefixedLine {
			t.Fatalf("holds %d bytes", len(w.buf))
		}
	}
	_, _ = w.Write([]byte("end\n"))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "[p] x") || !strings.HasSuffix(lines[2], "xend") || len(lines[0]) != maxPrefixedLine+4 {
		t.Fatalf("%d lines", len(lines))
	}
}
