// Package podview renders pods for people, the way kubectl does: the
// `get pods` table (with kubectl's STATUS column logic) and `describe pod`.
// Pure functions over core/v1 objects; no I/O beyond the writer given.
package podview

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podhost/podhost/internal/podstate"
)

// Table writes NAME READY STATUS RESTARTS AGE (and IP NODE SOURCE with
// wide; SOURCE is the manifest file or URL the pod came from, marked when
// podhost rolled the pod back to it from a newer version).
func Table(w io.Writer, pods []corev1.Pod, wide bool, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tREADY\tSTATUS\tRESTARTS\tAGE"
	if wide {
		header += "\tIP\tNODE\tSOURCE"
	}
	fmt.Fprintln(tw, header)
	for i := range pods {
		fmt.Fprintln(tw, strings.Join(Row(&pods[i], wide, now), "\t"))
	}
	return tw.Flush()
}

// Row is one pod's cells of the table.
func Row(p *corev1.Pod, wide bool, now time.Time) []string {
	row := []string{p.Name, Ready(p), Status(p), Restarts(p, now), Age(p, now)}
	if wide {
		ip := p.Status.PodIP
		if ip == "" {
			ip = "<none>"
		}
		node := p.Spec.NodeName
		if node == "" {
			node = "<none>"
		}
		src := p.Annotations[podstate.AnnotationConfigSource]
		if src == "" {
			src = "<none>"
		}
		if from := p.Annotations[podstate.AnnotationRolledBackFrom]; from != "" {
			src += " (rolled back from " + from + ")"
		}
		row = append(row, ip, node, src)
	}
	return row
}

// Ready is "ready/total" over app containers.
func Ready(p *corev1.Pod) string {
	ready := 0
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers))
}

// Restarts sums app container restarts, with the age of the last one.
func Restarts(p *corev1.Pod, now time.Time) string {
	n := int32(0)
	var last time.Time
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if n > 0 && !last.IsZero() {
		return fmt.Sprintf("%d (%s ago)", n, duration.HumanDuration(now.Sub(last)))
	}
	return fmt.Sprint(n)
}

// Age is the time since the pod started (or was created).
func Age(p *corev1.Pod, now time.Time) string {
	t := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		t = p.Status.StartTime.Time
	}
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
	reason := string(p.Status.Phase)
	if p.Status.Reason != "" {
		reason = p.Status.Reason
	}
	if r, ok := initStatus(p); ok {
		return r
	}
	hasRunning := false
	for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := p.Status.ContainerStatuses[i]
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
			reason = cs.State.Terminated.Reason
		case cs.State.Terminated != nil:
			if cs.State.Terminated.Signal != 0 {
				reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
			} else {
				reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			}
		case cs.Ready && cs.State.Running != nil:
			hasRunning = true
		}
	}
	if reason == "Completed" && hasRunning {
		reason = "Running"
	}
	if p.DeletionTimestamp != nil {
		reason = "Terminating"
	}
	return reason
}

func initStatus(p *corev1.Pod) (string, bool) {
	total := len(p.Spec.InitContainers)
	for i, cs := range p.Status.InitContainerStatuses {
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case cs.State.Terminated != nil:
			if cs.State.Terminated.Reason != "" {
				return "Init:" + cs.State.Terminated.Reason, true
			}
			return fmt.Sprintf("Init:ExitCode:%d", cs.State.Terminated.ExitCode), true
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			return "Init:" + cs.State.Waiting.Reason, true
		default:
			return fmt.Sprintf("Init:%d/%d", i, total), true
		}
	}
	return "", false
}

// Names writes pod/NAME lines (-o name).
func Names(w io.Writer, pods []corev1.Pod) {
	for _, p := range pods {
		fmt.Fprintln(w, "pod/"+p.Name)
	}
}
