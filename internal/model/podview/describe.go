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

	"github.com/podhost/podhost/internal/model/wellknown"
)

// Event is one pod event as describe shows it.
type Event struct {
	Time                  time.Time
	Type, Reason, Message string
}

// Describe writes a kubectl-style description of a pod: metadata, status,
// containers with their states, conditions, volumes and recent events (no
// Events section when events is nil, as kubectl's --show-events=false).
// confirmed is when the status was last confirmed against the runtime
// (containerd last answered); zero omits the line.
func Describe(w io.Writer, p *corev1.Pod, events []Event, confirmed, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	out := NewTerminalWriter(tw) // container-controlled text: escaped (escape.go)
	kv := func(k, v string) { fmt.Fprintf(out, "%s:\t%s\n", k, v) }
	kv("Name", p.Name)
	kv("Namespace", p.Namespace)
	kv("UID", string(p.UID))
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
	kv("IP", p.Status.PodIP)
	if len(p.Status.PodIPs) == 0 {
		kv("IPs", "<none>")
	} else {
		fmt.Fprintln(out, "IPs:")
		for _, ip := range p.Status.PodIPs {
			fmt.Fprintf(out, "  IP:\t%s\n", ip.IP)
		}
	}
	kv("Host IP", orNone(p.Status.HostIP))
	kv("QoS Class", string(p.Status.QOSClass))
	if len(p.Spec.InitContainers) > 0 {
		fmt.Fprintln(out, "Init Containers:")
		describeContainers(out, p.Spec.InitContainers, p.Status.InitContainerStatuses)
	}
	fmt.Fprintln(out, "Containers:")
	describeContainers(out, p.Spec.Containers, p.Status.ContainerStatuses)
	fmt.Fprintln(out, "Conditions:")
	fmt.Fprintln(out, "  Type\tStatus")
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(out, "  %s\t%s\n", c.Type, c.Status)
	}
	describeVolumes(out, p.Spec.Volumes)
	describeEvents(out, events, now)
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

func describeContainers(w io.Writer, specs []corev1.Container, statuses []corev1.ContainerStatus) {
	byName := map[string]corev1.ContainerStatus{}
	for _, s := range statuses {
		byName[s.Name] = s
	}
	for _, c := range specs {
		st := byName[c.Name]
		fmt.Fprintf(w, "  %s:\n", c.Name)
		fmt.Fprintf(w, "    Container ID:\t%s\n", st.ContainerID)
		fmt.Fprintf(w, "    Image:\t%s\n", c.Image)
		if st.ImageID != "" {
			fmt.Fprintf(w, "    Image ID:\t%s\n", st.ImageID)
		}
		if len(c.Command) > 0 {
			fmt.Fprintf(w, "    Command:\t%s\n", strings.Join(c.Command, " "))
		}
		if len(c.Args) > 0 {
			fmt.Fprintf(w, "    Args:\t%s\n", strings.Join(c.Args, " "))
		}
		for _, port := range c.Ports {
			fmt.Fprintf(w, "    Port:\t%d/%s (host %d)\n", port.ContainerPort, port.Protocol, port.HostPort)
		}
		describeState(w, "State", st.State)
		if st.LastTerminationState.Terminated != nil {
			describeState(w, "Last State", st.LastTerminationState)
		}
		fmt.Fprintf(w, "    Ready:\t%v\n", st.Ready)
		fmt.Fprintf(w, "    Restart Count:\t%d\n", st.RestartCount)
		if len(c.Resources.Limits) > 0 {
			fmt.Fprintf(w, "    Limits:\t%s\n", resourceString(c.Resources.Limits))
		}
		if len(c.Resources.Requests) > 0 {
			fmt.Fprintf(w, "    Requests:\t%s\n", resourceString(c.Resources.Requests))
		}
		for _, m := range c.VolumeMounts {
			ro := "rw"
			if m.ReadOnly {
				ro = "ro"
			}
			fmt.Fprintf(w, "    Mount:\t%s from %s (%s)\n", m.MountPath, m.Name, ro)
		}
	}
}

func describeState(w io.Writer, label string, s corev1.ContainerState) {
	switch {
	case s.Running != nil:
		fmt.Fprintf(w, "    %s:\tRunning\n      Started:\t%s\n", label, s.Running.StartedAt.Format(time.RFC1123Z))
	case s.Terminated != nil:
		t := s.Terminated
		fmt.Fprintf(w, "    %s:\tTerminated\n      Reason:\t%s\n      Exit Code:\t%d\n", label, t.Reason, t.ExitCode)
		if !t.StartedAt.IsZero() {
			fmt.Fprintf(w, "      Started:\t%s\n", t.StartedAt.Format(time.RFC1123Z))
		}
		if !t.FinishedAt.IsZero() {
			fmt.Fprintf(w, "      Finished:\t%s\n", t.FinishedAt.Format(time.RFC1123Z))
		}
		if t.Message != "" {
			fmt.Fprintf(w, "      Message:\t%s\n", t.Message)
		}
	case s.Waiting != nil:
		fmt.Fprintf(w, "    %s:\tWaiting\n      Reason:\t%s\n", label, s.Waiting.Reason)
		if s.Waiting.Message != "" {
			fmt.Fprintf(w, "      Message:\t%s\n", s.Waiting.Message)
		}
	default:
		fmt.Fprintf(w, "    %s:\tWaiting\n", label)
	}
}

func describeVolumes(w io.Writer, vols []corev1.Volume) {
	if len(vols) == 0 {
		fmt.Fprintln(w, "Volumes:\t<none>")
		return
	}
	fmt.Fprintln(w, "Volumes:")
	for _, v := range vols {
		switch {
		case v.HostPath != nil:
			t := ""
			if v.HostPath.Type != nil {
				t = string(*v.HostPath.Type)
			}
			fmt.Fprintf(w, "  %s:\tHostPath %s (type %q)\n", v.Name, v.HostPath.Path, t)
		case v.EmptyDir != nil:
			fmt.Fprintf(w, "  %s:\tEmptyDir (medium %q)\n", v.Name, v.EmptyDir.Medium)
		default:
			fmt.Fprintf(w, "  %s:\t<unsupported>\n", v.Name)
		}
	}
}

// describeEvents writes the Events section; none for nil events (kubectl
// describe's --show-events=false), "<none>" for an empty list.
func describeEvents(w io.Writer, events []Event, now time.Time) {
	if events == nil {
		return
	}
	if len(events) == 0 {
		fmt.Fprintln(w, "Events:\t<none>")
		return
	}
	fmt.Fprintln(w, "Events:")
	fmt.Fprintln(w, "  Type\tReason\tAge\tMessage")
	fmt.Fprintln(w, "  ----\t------\t----\t-------")
	for _, e := range events {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", EscapeCell(e.Type), EscapeCell(e.Reason), duration.HumanDuration(now.Sub(e.Time)), EscapeCell(e.Message))
	}
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

func resourceString(rl corev1.ResourceList) string {
	var parts []string
	for name, q := range rl {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
