package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/host/imagesdir"
	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/kubelet/manager"
	"github.com/podhost/podhost/internal/kubelet/status"
	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/ops/rthealth"
	"github.com/podhost/podhost/internal/services/api"
)

// backend adapts the manager and the status manager to the API server.
type backend struct {
	mgr    *manager.Manager
	images imagesErrors // the images directory's refused archives
	st     *status.Manager
	logDir string
	rt     execer
	// sandboxes: the pods' sandbox records (port-forward's netns).
	sandboxes podSandboxes
	views     *podViews
	health    *rthealth.Monitor
	state     *stateHealth
	node      *nodeSource
	// events: every pod's stored events, a deleted pod's too until they
	// expire (*state.DB).
	events interface {
		AllPodEvents() ([]records.PodEvents, error)
	}
}

// deletedPodEvents are the stored events of pods in namespace ("" all)
// that are gone (not among pods): the API server keeps a deleted pod's
// events, so `events` still tells why it failed or was refused.
func (b *backend) deletedPodEvents(namespace string, pods []*corev1.Pod) []records.PodEvents {
	if b.events == nil {
		return nil
	}
	all, err := b.events.AllPodEvents()
	if err != nil {
		return nil
	}
	live := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		live[p.UID] = true
	}
	return slices.DeleteFunc(all, func(pe records.PodEvents) bool {
		return live[pe.UID] || pe.Name == "" || namespace != "" && pe.Namespace != namespace
	})
}

// Node is this machine as a core/v1 Node (the kube API's one node).
func (b *backend) Node(ctx context.Context) (*corev1.Node, error) { return b.node.node(ctx), nil }

// Runtime reports containerd's health (the rthealth probe).
func (b *backend) Runtime() api.RuntimeStatus {
	s := b.health.Status()
	rs := api.RuntimeStatus{Address: s.Address, Healthy: s.Healthy, Since: s.Since, Error: s.Err, LastConfirmed: s.LastConfirmed}
	if b.state != nil {
		rs.StateDB = b.state.Status()
	}
	return rs
}

// execer runs a command in a running container (*runtime.Runtime).
type execer interface {
	ExecWith(ctx context.Context, id string, cmd []string, o runtime.ExecOptions) (int, error)
}

// SourcesReady: the first manifest snapshot was applied, so Pods lists
// every pod (the watch's initial-events-end bookmark waits for it).
func (b *backend) SourcesReady() bool { return b.mgr.SourcesReady() }

func (b *backend) Ready() bool {
	select {
	case <-b.st.Ready():
		return true
	default:
		return false
	}
}

// Pods returns every pod as the API shows it (podViews): shared objects,
// read-only.
func (b *backend) Pods() []*corev1.Pod { return b.views.build(b.mgr.Pods()) }

// find is the pod, or kubectl's words for a missing one (the CLI prints
// them as kubectl's NotFound: keep them).
func (b *backend) find(namespace, name string) (*corev1.Pod, error) {
	for _, p := range b.Pods() {
		if p.Namespace == namespace && p.Name == name {
			return p, nil
		}
	}
	return nil, api.NotFoundf("pods %q not found", name)
}

func (b *backend) FileErrors() []api.FileError {
	var out []api.FileError
	fes := b.mgr.FileErrors()
	if len(fes) == 0 && b.images == nil {
		return nil
	}
	from := map[string][]string{} // source → full names of its pods
	for _, p := range b.Pods() {
		src := p.Annotations[wellknown.AnnotationConfigSource]
		from[src] = append(from[src], p.Namespace+"/"+p.Name)
	}
	for _, fe := range fes {
		out = append(out, api.FileError{File: fe.File, Error: fe.Err.Error(), Kept: fe.Kept, Pods: filePods(fe, from[fe.File])})
	}
	if b.images != nil {
		for _, fe := range b.images.Errors() {
			out = append(out, api.FileError{File: fe.File, Error: fe.Err.Error(), Source: api.SourceImagesDir})
		}
	}
	return out
}

// imagesErrors is the images directory's loader (*imagesdir.Loader).
type imagesErrors interface{ Errors() []imagesdir.FileError }

// logsTo writes the selected log to w (which flushes per write, so that
// logs -f is live); ready runs once the log is found, before the first
// write.
func (b *backend) logsTo(ctx context.Context, req api.LogRequest, w io.Writer, ready func()) error {
	p, err := b.find(req.Namespace, req.Name)
	if err != nil {
		return err
	}
	name, restarts, err := pickContainer(p, req.Container)
	if err != nil {
		return err
	}
	attempt, err := logAttempt(p, name, restarts, req.Previous)
	if err != nil {
		return err
	}
	path := logs.Path(b.logDir, p.Namespace, p.Name, string(p.UID), name, attempt)
	if ready != nil {
		ready()
	}
	opts := logs.ReadOptions{Follow: req.Follow && !req.Previous, Tail: req.Tail, Timestamps: req.Timestamps, Since: req.Since}
	uid := p.UID
	opts.Running = func() bool { // the followed attempt still runs
		p, err := b.find(req.Namespace, req.Name)
		return err == nil && p.UID == uid && attemptRunning(p, name, attempt)
	}
	return logs.Read(ctx, path, opts, w, w)
}

// logAttempt is the attempt (restart count) whose log a request reads,
// chosen as the kubelet's validateContainerLogStatus chooses the container:
// with previous, the last terminated run (the one that just ended while
// the container waits in back-off, else the one before the current); else
// the current run, or the last one while it waits to restart. Its errors,
// the kubelet's words, are bad requests (400).
func logAttempt(p *corev1.Pod, name string, restarts int, previous bool) (int, error) {
	cs := podview.ContainerStatus(p, name)
	if cs == nil {
		return 0, fmt.Errorf("container %q in pod %q is not available", name, p.Name)
	}
	last := cs.LastTerminationState.Terminated
	switch {
	case previous && last != nil && cs.State.Waiting != nil:
		return restarts, nil
	case previous && (last != nil || restarts > 0):
		return max(restarts-1, 0), nil
	case previous:
		return 0, fmt.Errorf("previous terminated container %q in pod %q not found", name, p.Name)
	case cs.State.Running != nil, cs.State.Terminated != nil, last != nil:
		return restarts, nil
	case cs.State.Waiting != nil:
		return 0, fmt.Errorf("container %q in pod %q is waiting to start: %s", name, p.Name, waitingReason(cs.State.Waiting.Reason))
	}
	return 0, fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", name, p.Name)
}

// waitingReason is how the kubelet words a waiting reason in a log error.
func waitingReason(reason string) string {
	switch reason {
	case "ErrImagePull":
		return "image can't be pulled"
	case "ImagePullBackOff":
		return "trying and failing to pull image"
	}
	return reason
}

// attemptRunning reports whether the container's attempt (its restart
// count when it started) is the one running; a container with no status
// (not reported yet, e.g. right after a daemon restart) counts as running.
func attemptRunning(p *corev1.Pod, name string, attempt int) bool {
	cs := podview.ContainerStatus(p, name)
	return cs == nil || cs.State.Running != nil && int(cs.RestartCount) == attempt
}

// runningContainerID resolves the container (as pickContainer does) and
// returns its runtime ID; it must be running.
func runningContainerID(p *corev1.Pod, container string) (string, error) {
	name, _, err := pickContainer(p, container)
	if err != nil {
		return "", err
	}
	if msg := podview.NotRunning(p, name); msg != "" {
		return "", api.Conflictf("%s", msg)
	}
	cs := podview.ContainerStatus(p, name)
	id := strings.TrimPrefix(cs.ContainerID, "containerd://")
	if id == "" {
		return "", api.Conflictf("container %s is not running (state: %s)", name, podview.StateSummary(cs.State))
	}
	return id, nil
}

// pickContainer resolves the container name (kubectl's default when none
// was given: podview.DefaultContainer) and its restart count.
func pickContainer(p *corev1.Pod, name string) (string, int, error) {
	if name == "" {
		name, _ = podview.DefaultContainer(p)
	}
	if !slices.Contains(podview.ContainerNames(p), name) {
		return "", 0, fmt.Errorf("container %s is not valid for pod %s", name, p.Name) // a bad request, as the API server's
	}
	if cs := podview.ContainerStatus(p, name); cs != nil {
		return name, int(cs.RestartCount), nil
	}
	return name, 0, nil
}

// filePods: the pods a file error concerns — kept, running from the file,
// declared again (a duplicate) — sorted, each once.
func filePods(fe source.FileError, running []string) []string {
	pods := slices.Concat(fe.Kept, running)
	var walk func(err error)
	walk = func(err error) {
		var d *source.Duplicate
		switch j := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range j.Unwrap() {
				walk(e)
			}
		default:
			if errors.As(err, &d) && d.Kind == "Pod" {
				pods = append(pods, d.Namespace+"/"+d.Name)
			}
		}
	}
	walk(fe.Err)
	slices.Sort(pods)
	return slices.Compact(pods)
}
