// Package podview renders pods for people, the way kubectl does: the
// `get pods` table's columns (with kubectl's STATUS column logic) and
// `describe pod`.
// Pure functions over core/v1 objects; no I/O beyond the writer given.
package podview

import (
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podhost/podhost/internal/model/qos"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Header is the `get pods` table's column names, one per cell of Row: NAME
// READY STATUS RESTARTS AGE, and IP NODE SOURCE with wide (SOURCE is the
// manifest file or URL the pod came from, marked when podhost rolled the pod
// back to it from a newer version).
func Header(wide bool) []string {
	h := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if wide {
		h = append(h, "IP", "NODE", "SOURCE")
	}
	return h
}

// Row is one pod's cells of the table.
func Row(p *corev1.Pod, wide bool, now time.Time) []string {
	// READY as kubectl: the ready app containers and started, ready
	// sidecars over the app containers plus the sidecars.
	s := summarize(p)
	row := []string{p.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.reason, s.restarts(now), Age(p, now)}
	if wide {
		ip := p.Status.PodIP
		if ip == "" {
			ip = "<none>"
		}
		node := p.Spec.NodeName
		if node == "" {
			node = "<none>"
		}
		src := p.Annotations[wellknown.AnnotationConfigSource]
		if src == "" {
			src = "<none>"
		}
		if from := p.Annotations[wellknown.AnnotationRolledBackFrom]; from != "" {
			src += " (rolled back from " + from + ")"
		}
		row = append(row, ip, node, src)
	}
	return row
}

// restarts is kubectl's RESTARTS: the count, with the age of the last
// restart among the containers counted.
func (s summary) restarts(now time.Time) string {
	if s.restartCount != 0 && !s.lastRestart.IsZero() {
		return fmt.Sprintf("%d (%s ago)", s.restartCount, duration.HumanDuration(now.Sub(s.lastRestart)))
	}
	return fmt.Sprint(s.restartCount)
}

// Age is the time since the pod started (or was created).
func Age(p *corev1.Pod, now time.Time) string {
	t := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		t = p.Status.StartTime.Time
	}
	return AgeSince(t, now)
}

// AgeSince is kubectl's AGE of an object created at t (its
// translateTimestampSince): a short duration ("5m", "3d4h"), "<unknown>"
// for a zero t.
func AgeSince(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// Status is kubectl's STATUS column: the pod phase or reason, overridden by
// init progress ("Init:1/2", "Init:CrashLoopBackOff") and by the most
// telling container state (a waiting reason such as CrashLoopBackOff, or a
// terminated reason such as Completed or OOMKilled).
func Status(p *corev1.Pod) string {
	return summarize(p).reason
}

// summary is what kubectl's printPod (pkg/printers/internalversion) derives
// from a pod for its READY, STATUS and RESTARTS columns.
type summary struct {
	ready, total int
	reason       string
	restartCount int32
	lastRestart  time.Time
}

// restartTally sums restart counts and keeps the latest last termination.
type restartTally struct {
	n    int32
	last time.Time
}

func (r *restartTally) add(cs *corev1.ContainerStatus) {
	r.n += cs.RestartCount
	if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(r.last) {
		r.last = t.FinishedAt.Time
	}
}

// summarize follows printPod: the init container statuses first; the app
// containers decide when initialization is over or the pod's Initialized
// condition is True (a sidecar stopped after the app containers finished
// leaves an init status that looks unfinished). RESTARTS counts the init
// containers walked while the pod initializes, else the sidecars walked
// plus the app containers.
func summarize(p *corev1.Pod) summary {
	s := summary{total: len(p.Spec.Containers), reason: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		s.reason = p.Status.Reason
	}
	sidecars := map[string]bool{}
	for i := range p.Spec.InitContainers {
		if qos.IsRestartable(&p.Spec.InitContainers[i]) {
			sidecars[p.Spec.InitContainers[i].Name] = true
			s.total++
		}
	}
	var all, sidecarRestarts restartTally
	initializing := s.initContainers(p, sidecars, &all, &sidecarRestarts)
	s.restartCount, s.lastRestart = all.n, all.last
	if !initializing || conditionTrue(p, corev1.PodInitialized) {
		s.appContainers(p, sidecarRestarts)
	}
	if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		s.reason = "Terminating"
	}
	return s
}

// initContainers walks the init container statuses up to the first one
// that has not finished (a started sidecar has, and counts as ready if it
// is): that one sets the reason ("Init:<reason>" or "Init:<i>/<n>").
// It reports whether there was one, and tallies the restarts of the
// statuses walked (all, and those of sidecars).
func (s *summary) initContainers(p *corev1.Pod, sidecars map[string]bool, all, sidecarRestarts *restartTally) bool {
	for i := range p.Status.InitContainerStatuses {
		cs := &p.Status.InitContainerStatuses[i]
		all.add(cs)
		if sidecars[cs.Name] {
			sidecarRestarts.add(cs)
		}
		t, w := cs.State.Terminated, cs.State.Waiting
		switch {
		case t != nil && t.ExitCode == 0:
			continue
		case sidecars[cs.Name] && cs.Started != nil && *cs.Started:
			if cs.Ready {
				s.ready++
			}
			continue
		case t != nil:
			s.reason = "Init:" + terminatedReason(t)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			s.reason = "Init:" + w.Reason
		default:
			s.reason = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		return true
	}
	return false
}

// appContainers lets the app containers, last first, set the reason (a
// waiting or terminated one), counts the ready, running ones and sets the
// restarts: theirs plus the sidecars'.
func (s *summary) appContainers(p *corev1.Pod, restarts restartTally) {
	hasRunning := false
	for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := &p.Status.ContainerStatuses[i]
		restarts.add(cs)
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			s.reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			s.reason = terminatedReason(cs.State.Terminated)
		case cs.Ready && cs.State.Running != nil:
			hasRunning = true
			s.ready++
		}
	}
	// a container still running turns Completed back into Running, or
	// NotReady while the pod's Ready condition is not True
	if s.reason == "Completed" && hasRunning {
		s.reason = "NotReady"
		if conditionTrue(p, corev1.PodReady) {
			s.reason = "Running"
		}
	}
	s.restartCount, s.lastRestart = restarts.n, restarts.last
}

// terminatedReason is a terminated container's reason, else its signal or
// exit code.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	}
	return fmt.Sprintf("ExitCode:%d", t.ExitCode)
}

func conditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Names writes pod/NAME lines (-o name).
func Names(w io.Writer, pods []corev1.Pod) {
	for _, p := range pods {
		fmt.Fprintln(w, "pod/"+p.Name)
	}
}
