package podview

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podhost/podhost/internal/model/qos"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Event is one pod event as describe shows it: the kubelet's recorder
// aggregates repeats (Count, First; Time is the last occurrence).
type Event struct {
	Time                  time.Time // the last occurrence (lastTimestamp)
	First                 time.Time // the first (firstTimestamp); zero: Time
	Count                 int32     // occurrences; 0 and 1: one
	Type, Reason, Message string
}

// Describe writes a pod's description in kubectl describe pod's layout
// (k8s.io/kubectl/pkg/describe describePod, ported: what a pod on podhost
// has — no priority class, service account, tolerations or controller),
// with podhost's Rolled Back and Last confirmed lines; the events last (no
// Events section when events is nil, as kubectl's --show-events=false).
// confirmed is when the status was last confirmed against the runtime
// (containerd last answered); zero omits the line. Control characters a
// terminal would act on are escaped, as kubectl's printers do.
func Describe(w io.Writer, p *corev1.Pod, events []Event, confirmed, now time.Time) error {
	tw := tabwriter.NewWriter(NewTerminalWriter(w), 0, 8, 2, ' ', 0)
	kv := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	kv("Name", p.Name)
	kv("Namespace", p.Namespace)
	if p.Spec.Priority != nil {
		kv("Priority", fmt.Sprint(*p.Spec.Priority))
	}
	if p.Spec.PriorityClassName != "" {
		kv("Priority Class Name", p.Spec.PriorityClassName)
	}
	if p.Spec.NodeName == "" {
		kv("Node", "<none>")
	} else {
		kv("Node", p.Spec.NodeName+"/"+p.Status.HostIP)
	}
	if p.Status.StartTime != nil {
		kv("Start Time", p.Status.StartTime.Format(time.RFC1123Z))
	}
	kv("Labels", mapString(p.Labels))
	kv("Annotations", annotationsString(p.Annotations))
	describeStatus(kv, p, now)
	if from := p.Annotations[wellknown.AnnotationRolledBackFrom]; from != "" {
		kv("Rolled Back", fmt.Sprintf("from %s: %s (the file's version is not run until it changes)",
			from, p.Annotations[wellknown.AnnotationRolledBackReason]))
	}
	if !confirmed.IsZero() {
		kv("Last confirmed", fmt.Sprintf("%s (%s ago)", confirmed.Format(time.RFC1123Z), duration.HumanDuration(now.Sub(confirmed))))
	}
	describeSeccomp(tw, "", p.Spec.SecurityContext)
	kv("IP", p.Status.PodIP)
	if len(p.Status.PodIPs) == 0 {
		kv("IPs", "<none>")
	} else {
		fmt.Fprintln(tw, "IPs:")
		for _, ip := range p.Status.PodIPs {
			fmt.Fprintf(tw, "  IP:\t%s\n", ip.IP)
		}
	}
	if len(p.Spec.InitContainers) > 0 {
		describeContainers(tw, "Init Containers", p, p.Spec.InitContainers, p.Status.InitContainerStatuses)
	}
	describeContainers(tw, "Containers", p, p.Spec.Containers, p.Status.ContainerStatuses)
	if len(p.Status.Conditions) > 0 {
		fmt.Fprintln(tw, "Conditions:\n  Type\tStatus")
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(tw, "  %v \t%v \n", c.Type, c.Status)
		}
	}
	describeVolumes(tw, p.Spec.Volumes)
	kv("QoS Class", string(qos.PodQOS(p)))
	kv("Node-Selectors", mapString(p.Spec.NodeSelector))
	describeEvents(tw, events, now)
	return tw.Flush()
}

// describeStatus writes kubectl describePod's Status line (the phase, or
// "Terminating (lasts <age of the deletion>)" and the grace period while a
// deleted pod has not finished) and its Reason and Message lines.
func describeStatus(kv func(k, v string), p *corev1.Pod, now time.Time) {
	if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
		kv("Status", "Terminating (lasts "+duration.HumanDuration(now.Sub(p.DeletionTimestamp.Time))+")")
		if g := p.DeletionGracePeriodSeconds; g != nil {
			kv("Termination Grace Period", fmt.Sprintf("%ds", *g))
		}
	} else {
		kv("Status", string(p.Status.Phase))
	}
	if p.Status.Reason != "" {
		kv("Reason", p.Status.Reason)
	}
	if p.Status.Message != "" {
		kv("Message", p.Status.Message)
	}
}

// describeSeccomp is kubectl's SeccompProfile and LocalhostProfile lines
// (indent: the container's level).
func describeSeccomp(w io.Writer, indent string, sc *corev1.PodSecurityContext) {
	if sc == nil || sc.SeccompProfile == nil {
		return
	}
	writeSeccomp(w, indent, sc.SeccompProfile)
}

func writeSeccomp(w io.Writer, indent string, sp *corev1.SeccompProfile) {
	fmt.Fprintf(w, "%sSeccompProfile:\t%s\n", indent, sp.Type)
	if sp.Type == corev1.SeccompProfileTypeLocalhost && sp.LocalhostProfile != nil {
		fmt.Fprintf(w, "%sLocalhostProfile:\t%s\n", indent, *sp.LocalhostProfile)
	}
}

// describeEvents writes kubectl's DescribeEvents: none for nil events
// (--show-events=false), "<none>" for an empty list; the table after a
// flush, so its columns are its own; an event seen several times as
// "<last> (x<count> over <since first>)".
func describeEvents(tw *tabwriter.Writer, events []Event, now time.Time) {
	if events == nil {
		return
	}
	if len(events) == 0 {
		fmt.Fprintln(tw, "Events:\t<none>")
		return
	}
	tw.Flush()
	fmt.Fprintln(tw, "Events:\n  Type\tReason\tAge\tFrom\tMessage")
	fmt.Fprintln(tw, "  ----\t------\t----\t----\t-------")
	for _, e := range events {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, EventAge(e, now), "kubelet", strings.TrimSpace(e.Message))
	}
}

// EventAge is kubectl's Age of an event: since it was last seen, with the
// count and the time since the first for a repeated one ("3m (x95 over
// 1h)").
func EventAge(e Event, now time.Time) string {
	last := duration.HumanDuration(now.Sub(e.Time))
	if e.Count <= 1 {
		return last
	}
	first := e.First
	if first.IsZero() {
		first = e.Time
	}
	return fmt.Sprintf("%s (x%d over %s)", last, e.Count, duration.HumanDuration(now.Sub(first)))
}

func mapString(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString("\n\t")
		}
		b.WriteString(k + "=" + m[k])
	}
	return b.String()
}

// maxAnnotationLen is where kubectl describe breaks an annotation onto
// lines of its own (and shortens them).
const maxAnnotationLen = 140

// annotationsString is kubectl's printAnnotationsMultiline: "key: value"
// sorted by key, one per line; a long or multi-line value on indented lines
// of its own, each cut to maxAnnotationLen-2 characters and "...";
// kubectl's last-applied-configuration left out.
func annotationsString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != corev1.LastAppliedConfigAnnotation {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "<none>"
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		v := strings.TrimSuffix(m[k], "\n")
		if len(v)+len(k)+2 <= maxAnnotationLen && !strings.Contains(v, "\n") {
			lines = append(lines, k+": "+v)
			continue
		}
		lines = append(lines, k+":")
		for _, l := range strings.Split(v, "\n") {
			if len(l) > maxAnnotationLen-2 {
				l = l[:maxAnnotationLen-2] + "..."
			}
			lines = append(lines, "  "+l)
		}
	}
	return strings.Join(lines, "\n\t")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
