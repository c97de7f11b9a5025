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
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/services/api"
)

// LogsOptions select container logs: one pod's (Name) or those of the pods
// a label selector matches, as kubectl logs.
type LogsOptions struct {
	Socket, Namespace, Name, Container string
	Follow, Previous, Timestamps       bool
	Tail                               int
	TailSet                            bool // --tail given: with -l the default is 10, as kubectl's
	// Since (--since) and SinceTime (--since-time, RFC 3339) select the
	// messages logged after a moment; at most one of them.
	Since     time.Duration
	SinceTime string

	AllContainers  bool   // --all-containers: init containers, then the others
	Prefix         bool   // --prefix: "[pod/NAME/CONTAINER] " before each line
	Selector       string // -l: the pods a label selector matches, instead of Name
	MaxLogRequests int    // --max-log-requests: most streams followed at once (0: 5)
}

// defaultMaxLogRequests is kubectl's --max-log-requests default.
const defaultMaxLogRequests = 5

// selectorTail is kubectl's --tail default with -l.
const selectorTail = 10

// logStream is one container's log.
type logStream struct{ pod, container string }

// Logs prints container logs through the daemon: without -f one after
// another, with -f all followed at once. The pod may be named pod/NAME, as
// with kubectl; a missing one is a NotFoundError.
func Logs(ctx context.Context, o LogsOptions, s cmdutil.IOStreams) error {
	name, err := podArg(o.Name)
	if err != nil {
		return err
	}
	o.Name = name
	return cmdutil.PodNotFound(o.logs(ctx, s), o.Name)
}

func (o LogsOptions) logs(ctx context.Context, s cmdutil.IOStreams) error {
	if err := o.validate(); err != nil {
		return err
	}
	since, err := logsSince(o, time.Now())
	if err != nil {
		return err
	}
	c := api.NewClient(o.Socket)
	streams, err := o.streams(ctx, c, s)
	if err != nil || len(streams) == 0 {
		return err
	}
	if limit := o.maxLogRequests(); o.Follow && len(streams) > limit {
		return fmt.Errorf("you are attempting to follow %d log streams, but maximum allowed concurrency is %d, use --max-log-requests to increase the limit", len(streams), limit)
	}
	req := api.LogRequest{Namespace: o.Namespace, Follow: o.Follow, Previous: o.Previous,
		Timestamps: o.Timestamps, Tail: o.tail(), Since: since}
	if o.Follow && len(streams) > 1 {
		return o.followAll(ctx, c, req, streams, s)
	}
	out := &lineOut{w: s.Out}
	for _, st := range streams {
		if ctx.Err() != nil {
			return nil // interrupted: as one stream, the rest is not asked for
		}
		if err := o.copyLog(ctx, c, req, st, out, !o.Prefix); err != nil {
			return err
		}
	}
	return nil
}

func (o LogsOptions) validate() error {
	switch {
	case o.Name == "" && o.Selector == "":
		return errors.New("a pod NAME or -l/--selector is required")
	case o.Name != "" && o.Selector != "":
		return errors.New("only a selector (-l) or a POD name is allowed")
	case o.AllContainers && o.Container != "":
		return fmt.Errorf("--all-containers=true should not be specified with container name %s", o.Container)
	case o.MaxLogRequests < 0:
		return errors.New("--max-log-requests must be greater than 0")
	}
	return cmdutil.ValidateNames(o.Namespace, o.Name)
}

func (o LogsOptions) maxLogRequests() int {
	if o.MaxLogRequests == 0 {
		return defaultMaxLogRequests
	}
	return o.MaxLogRequests
}

// tail is the lines from the end to show: -l without --tail shows 10.
func (o LogsOptions) tail() int {
	if o.Selector != "" && !o.TailSet {
		return selectorTail
	}
	return o.Tail
}

// streams lists the containers whose logs o selects, in kubectl's order.
func (o LogsOptions) streams(ctx context.Context, c *api.Client, s cmdutil.IOStreams) ([]logStream, error) {
	if o.Selector == "" && !o.AllContainers {
		container := o.Container
		if container == "" {
			container = cmdutil.DefaultContainer(ctx, c, o.Namespace, o.Name, s)
		}
		return []logStream{{o.Name, container}}, nil
	}
	pods, err := o.pods(ctx, c)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		cmdutil.NoResources(s.ErrOut, o.Namespace)
		return nil, nil
	}
	if o.Container != "" {
		for _, p := range pods {
			if err := hasContainer(p, o.Container); err != nil {
				return nil, err
			}
		}
	}
	var streams []logStream
	for _, p := range pods {
		for _, name := range o.containers(p, s) {
			streams = append(streams, logStream{p.Name, name})
		}
	}
	return streams, nil
}

// pods is the named pod or those the selector matches, by name.
func (o LogsOptions) pods(ctx context.Context, c *api.Client) ([]*corev1.Pod, error) {
	if o.Selector == "" {
		p, err := c.GetPod(ctx, o.Namespace, o.Name)
		if err != nil {
			return nil, err
		}
		return []*corev1.Pod{p}, nil
	}
	match, err := GetOptions{Namespace: o.Namespace, Selector: o.Selector}.matcher()
	if err != nil {
		return nil, fmt.Errorf("-l/--selector: %w", err)
	}
	list, err := c.ListPods(ctx)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		if match(&list.Items[i]) {
			pods = append(pods, &list.Items[i])
		}
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// hasContainer fails, in kubectl's words, unless p has a container (init
// or app) of that name.
func hasContainer(p *corev1.Pod, name string) error {
	names := podview.ContainerNames(p)
	if slices.Contains(names, name) {
		return nil
	}
	return fmt.Errorf("container %s is not valid for pod %s out of: %s", name, p.Name, strings.Join(names, ", "))
}

// containers is the pod's containers o selects: all of them (init ones
// first, as kubectl), -c, or the default one.
func (o LogsOptions) containers(p *corev1.Pod, s cmdutil.IOStreams) []string {
	switch {
	case o.AllContainers:
		return podview.ContainerNames(p)
	case o.Container != "":
		return []string{o.Container}
	}
	name, note := podview.DefaultContainer(p)
	if note != "" {
		fmt.Fprintln(s.ErrOut, note)
	}
	return []string{name}
}

// copyLog prints one container's log: as it comes when direct (one stream,
// no prefix), else line by line, each prefixed with --prefix's.
func (o LogsOptions) copyLog(ctx context.Context, c *api.Client, req api.LogRequest, st logStream, out *lineOut, direct bool) error {
	req.Name, req.Container = st.pod, st.container
	if direct {
		return c.Logs(ctx, req, out.w)
	}
	w := &lineWriterTo{out: out}
	if o.Prefix {
		w.prefix = fmt.Sprintf("[pod/%s/%s] ", st.pod, st.container)
	}
	err := c.Logs(ctx, req, w)
	return errors.Join(err, w.flush())
}

// followAll follows every stream at once; the first error stops them all.
func (o LogsOptions) followAll(ctx context.Context, c *api.Client, req api.LogRequest, streams []logStream, s cmdutil.IOStreams) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &lineOut{w: s.Out}
	errs := make(chan error, len(streams))
	var wg sync.WaitGroup
	for _, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := o.copyLog(ctx, c, req, st, out, false); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when none failed
}

// lineOut writes whole lines to w, one writer at a time, so that lines of
// streams followed at once never mix (kubectl's prefix writer).
type lineOut struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineOut) write(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(b)
	return err
}

// maxPrefixedLine bounds the line a lineWriterTo holds: a longer one is
// printed in lines of that size, each with its prefix (kubectl holds the
// whole line, whatever its size).
const maxPrefixedLine = 1 << 20

// lineWriterTo collects a stream's output into lines and writes each, with
// its prefix, to out; flush writes what is left of a last partial line.
type lineWriterTo struct {
	out    *lineOut
	prefix string
	buf    []byte
}

func (w *lineWriterTo) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		var line []byte
		switch {
		case i >= 0:
			line = w.buf[:i+1]
		case len(w.buf) >= maxPrefixedLine:
			line = append(w.buf[:maxPrefixedLine:maxPrefixedLine], '\n')
			i = maxPrefixedLine - 1
		default:
			return len(p), nil
		}
		if err := w.emit(line); err != nil {
			return 0, err // stdout is gone: the stream stops, as kubectl's
		}
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriterTo) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	line := w.buf
	w.buf = nil
	return w.emit(line)
}

func (w *lineWriterTo) emit(line []byte) error {
	return w.out.write(append([]byte(w.prefix), line...))
}

// logsSince resolves --since / --since-time to a moment (zero: none).
func logsSince(o LogsOptions, now time.Time) (time.Time, error) {
	switch {
	case o.Since != 0 && o.SinceTime != "":
		return time.Time{}, errors.New("at most one of --since-time or --since may be specified")
	case o.Since < 0:
		return time.Time{}, errors.New("--since must be greater than 0")
	case o.Since > 0:
		return now.Add(-o.Since), nil
	case o.SinceTime != "":
		t, err := time.Parse(time.RFC3339, o.SinceTime)
		if err != nil {
			return time.Time{}, fmt.Errorf("--since-time: want an RFC 3339 time: %w", err)
		}
		return t, nil
	}
	return time.Time{}, nil
}
