package podview

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/model/fieldpath"
)

// describeContainers is kubectl's: per container its basic info, command
// and args (a line per argument, multi-line ones split), state, resources,
// probes, environment and mounts.
func describeContainers(w io.Writer, label string, p *corev1.Pod, specs []corev1.Container, statuses []corev1.ContainerStatus) {
	byName := map[string]corev1.ContainerStatus{}
	for _, s := range statuses {
		byName[s.Name] = s
	}
	none := ""
	if len(specs) == 0 {
		none = " <none>"
	}
	fmt.Fprintf(w, "%s:%s\n", label, none)
	for i := range specs {
		c := &specs[i]
		st, ok := byName[c.Name]
		describeContainerBasics(w, c, st, ok)
		describeCommand(w, c)
		if ok {
			describeState(w, "State", st.State)
			if st.LastTerminationState.Terminated != nil {
				describeState(w, "Last State", st.LastTerminationState)
			}
			fmt.Fprintf(w, "    Ready:\t%s\n", printBool(st.Ready))
			fmt.Fprintf(w, "    Restart Count:\t%d\n", st.RestartCount)
		}
		describeResources(w, "    ", &c.Resources)
		describeProbes(w, c)
		if len(c.EnvFrom) > 0 {
			describeEnvFrom(w, c)
		}
		describeEnv(w, p, c)
		describeMounts(w, c)
	}
}

func describeContainerBasics(w io.Writer, c *corev1.Container, st corev1.ContainerStatus, ok bool) {
	fmt.Fprintf(w, "  %s:\n", c.Name)
	if ok {
		fmt.Fprintf(w, "    Container ID:\t%s\n", st.ContainerID)
	}
	fmt.Fprintf(w, "    Image:\t%s\n", c.Image)
	if ok {
		fmt.Fprintf(w, "    Image ID:\t%s\n", st.ImageID)
	}
	ports := portsString(c.Ports, func(p corev1.ContainerPort) int32 { return p.ContainerPort })
	if strings.Contains(ports, ",") {
		fmt.Fprintf(w, "    Ports:\t%s\n", ports)
	} else {
		fmt.Fprintf(w, "    Port:\t%s\n", orNone(ports))
	}
	hostPorts := portsString(c.Ports, func(p corev1.ContainerPort) int32 { return p.HostPort })
	if strings.Contains(hostPorts, ",") {
		fmt.Fprintf(w, "    Host Ports:\t%s\n", hostPorts)
	} else {
		fmt.Fprintf(w, "    Host Port:\t%s\n", orNone(hostPorts))
	}
	if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		writeSeccomp(w, "    ", sc.SeccompProfile)
	}
}

// portsString is kubectl's describeContainerPorts (and HostPorts): "80/TCP
// (http), 443/TCP".
func portsString(ports []corev1.ContainerPort, number func(corev1.ContainerPort) int32) string {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		s := fmt.Sprintf("%d/%s", number(p), p.Protocol)
		if p.Name != "" {
			s += " (" + p.Name + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// describeCommand is kubectl's: Command and Args as blocks, one line per
// argument and per line of a multi-line argument (a script keeps the
// table's layout).
func describeCommand(w io.Writer, c *corev1.Container) {
	for _, block := range []struct {
		name string
		args []string
	}{{"Command", c.Command}, {"Args", c.Args}} {
		if len(block.args) == 0 {
			continue
		}
		fmt.Fprintf(w, "    %s:\n", block.name)
		for _, a := range block.args {
			for _, line := range strings.Split(a, "\n") {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
}

// describeState is kubectl's describeStatus of a container state.
func describeState(w io.Writer, label string, s corev1.ContainerState) {
	switch {
	case s.Running != nil:
		fmt.Fprintf(w, "    %s:\tRunning\n      Started:\t%s\n", label, s.Running.StartedAt.Format(time.RFC1123Z))
	case s.Waiting != nil:
		fmt.Fprintf(w, "    %s:\tWaiting\n", label)
		if s.Waiting.Reason != "" {
			fmt.Fprintf(w, "      Reason:\t%s\n", s.Waiting.Reason)
		}
	case s.Terminated != nil:
		t := s.Terminated
		fmt.Fprintf(w, "    %s:\tTerminated\n", label)
		if t.Reason != "" {
			fmt.Fprintf(w, "      Reason:\t%s\n", t.Reason)
		}
		if t.Message != "" {
			fmt.Fprintf(w, "      Message:\t%s\n", t.Message)
		}
		fmt.Fprintf(w, "      Exit Code:\t%d\n", t.ExitCode)
		if t.Signal > 0 {
			fmt.Fprintf(w, "      Signal:\t%d\n", t.Signal)
		}
		fmt.Fprintf(w, "      Started:\t%s\n", t.StartedAt.Format(time.RFC1123Z))
		fmt.Fprintf(w, "      Finished:\t%s\n", t.FinishedAt.Format(time.RFC1123Z))
	default:
		fmt.Fprintf(w, "    %s:\tWaiting\n", label)
	}
}

// describeResources is kubectl's: Limits and Requests, a line per resource
// sorted by name.
func describeResources(w io.Writer, indent string, r *corev1.ResourceRequirements) {
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"Limits", r.Limits}, {"Requests", r.Requests}} {
		if len(list.rl) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s%s:\n", indent, list.name)
		names := make([]string, 0, len(list.rl))
		for n := range list.rl {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			q := list.rl[corev1.ResourceName(n)]
			fmt.Fprintf(w, "%s  %s:\t%s\n", indent, n, q.String())
		}
	}
}

func describeProbes(w io.Writer, c *corev1.Container) {
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
	}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
		if pr.probe != nil {
			fmt.Fprintf(w, "    %s:\t%s\n", pr.name, DescribeProbe(pr.probe))
		}
	}
}

// DescribeProbe is kubectl's one-line probe: "http-get http://:8080/healthz
// delay=0s timeout=1s period=10s successThreshold=1 failureThreshold=3".
func DescribeProbe(probe *corev1.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds successThreshold=%d failureThreshold=%d",
		probe.InitialDelaySeconds, probe.TimeoutSeconds, probe.PeriodSeconds, probe.SuccessThreshold, probe.FailureThreshold)
	switch {
	case probe.Exec != nil:
		return fmt.Sprintf("exec %v %s", probe.Exec.Command, attrs)
	case probe.HTTPGet != nil:
		u := &url.URL{Scheme: strings.ToLower(string(probe.HTTPGet.Scheme)), Host: probe.HTTPGet.Host, Path: probe.HTTPGet.Path}
		if port := probe.HTTPGet.Port.String(); port != "" {
			u.Host = net.JoinHostPort(probe.HTTPGet.Host, port)
		}
		return fmt.Sprintf("http-get %s %s", u.String(), attrs)
	case probe.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s %s", probe.TCPSocket.Host, probe.TCPSocket.Port.String(), attrs)
	case probe.GRPC != nil:
		service := ""
		if probe.GRPC.Service != nil {
			service = *probe.GRPC.Service
		}
		return fmt.Sprintf("grpc <pod>:%d %s %s", probe.GRPC.Port, service, attrs)
	}
	return "unknown " + attrs
}

func describeEnvFrom(w io.Writer, c *corev1.Container) {
	fmt.Fprintln(w, "    Environment Variables from:")
	for _, e := range c.EnvFrom {
		from, name, optional := "", "", false
		switch {
		case e.ConfigMapRef != nil:
			from, name, optional = "ConfigMap", e.ConfigMapRef.Name, e.ConfigMapRef.Optional != nil && *e.ConfigMapRef.Optional
		case e.SecretRef != nil:
			from, name, optional = "Secret", e.SecretRef.Name, e.SecretRef.Optional != nil && *e.SecretRef.Optional
		}
		if e.Prefix == "" {
			fmt.Fprintf(w, "      %s\t%s\tOptional: %t\n", name, from, optional)
		} else {
			fmt.Fprintf(w, "      %s\t%s with prefix '%s'\tOptional: %t\n", name, from, e.Prefix, optional)
		}
	}
}

// describeEnv is kubectl's describeContainerEnvVars: a value as it is
// (each further line of a multi-line one on a line of its own), a fieldRef
// with its value from the pod's metadata, a resourceFieldRef with the
// container's, a ConfigMap or Secret key by name (a Secret's value is never
// shown).
func describeEnv(w io.Writer, p *corev1.Pod, c *corev1.Container) {
	if len(c.Env) == 0 {
		fmt.Fprintln(w, "    Environment:\t<none>")
		return
	}
	fmt.Fprintln(w, "    Environment:")
	for _, e := range c.Env {
		from := e.ValueFrom
		switch {
		case from == nil:
			for i, line := range strings.Split(e.Value, "\n") {
				if i == 0 {
					fmt.Fprintf(w, "      %s:\t%s\n", e.Name, line)
				} else {
					fmt.Fprintf(w, "      \t%s\n", line)
				}
			}
		case from.FieldRef != nil:
			v, _ := fieldpath.ExtractFieldPathAsString(p, from.FieldRef.FieldPath) // spec and status paths: "", as kubectl
			fmt.Fprintf(w, "      %s:\t%s (%s:%s)\n", e.Name, v, from.FieldRef.APIVersion, from.FieldRef.FieldPath)
		case from.ResourceFieldRef != nil:
			v := containerResource(from.ResourceFieldRef, c)
			if r := from.ResourceFieldRef.Resource; v == "0" && (r == "limits.cpu" || r == "limits.memory") {
				v = "node allocatable"
			}
			fmt.Fprintf(w, "      %s:\t%s (%s)\n", e.Name, v, from.ResourceFieldRef.Resource)
		case from.SecretKeyRef != nil:
			r := from.SecretKeyRef
			fmt.Fprintf(w, "      %s:\t<set to the key '%s' in secret '%s'>\tOptional: %t\n", e.Name, r.Key, r.Name, r.Optional != nil && *r.Optional)
		case from.ConfigMapKeyRef != nil:
			r := from.ConfigMapKeyRef
			fmt.Fprintf(w, "      %s:\t<set to the key '%s' of config map '%s'>\tOptional: %t\n", e.Name, r.Key, r.Name, r.Optional != nil && *r.Optional)
		}
	}
}

// containerResource is kubectl's ExtractContainerResourceValue: c's
// request or limit divided by the divisor, rounded up; "" for another
// resource.
func containerResource(ref *corev1.ResourceFieldSelector, c *corev1.Container) string {
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	var q resource.Quantity
	switch ref.Resource {
	case "limits.cpu", "limits.memory", "limits.ephemeral-storage":
		q = c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(ref.Resource, "limits."))]
	case "requests.cpu", "requests.memory", "requests.ephemeral-storage":
		q = c.Resources.Requests[corev1.ResourceName(strings.TrimPrefix(ref.Resource, "requests."))]
	default:
		return ""
	}
	if strings.HasSuffix(ref.Resource, ".cpu") {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10)
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10)
}

// describeMounts is kubectl's describeContainerVolumes: the mounts sorted
// by path, "(ro|rw[,path=\"sub\"])".
func describeMounts(w io.Writer, c *corev1.Container) {
	if len(c.VolumeMounts) == 0 {
		fmt.Fprintln(w, "    Mounts:\t<none>")
		return
	}
	fmt.Fprintln(w, "    Mounts:")
	mounts := slices.Clone(c.VolumeMounts)
	sort.SliceStable(mounts, func(i, j int) bool { return mounts[i].MountPath < mounts[j].MountPath })
	for _, m := range mounts {
		flags := []string{"rw"}
		if m.ReadOnly {
			flags[0] = "ro"
		}
		if m.SubPath != "" {
			flags = append(flags, fmt.Sprintf("path=%q", m.SubPath))
		}
		fmt.Fprintf(w, "      %s from %s (%s)\n", m.MountPath, m.Name, strings.Join(flags, ","))
	}
}

// printBool is kubectl's: True or False.
func printBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
