package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/model/qos"
)

// DescribeNode prints podhost's node (the machine itself) as kubectl
// describe node: without names, the node; else each name that is the
// node's, two blank lines apart, and a NotFoundError per other one, after
// them. Its pods are the daemon's pods not in phase Succeeded or Failed.
// Events: <none> (podhost records pod events only), left out with
// HideEvents. Nodes are cluster-scoped: o.Namespace is not looked at.
func DescribeNode(ctx context.Context, o GetOptions, s cmdutil.IOStreams) error {
	if slices.Contains(o.Names, "") {
		return cmdutil.ErrEmptyName
	}
	c := cmdutil.NewClient(o.Socket, s)
	node, err := c.Node(ctx)
	if err != nil {
		return err
	}
	found, missing := cmdutil.ByName([]corev1.Node{*node}, o.Names, func(n *corev1.Node) string { return n.Name }, "nodes")
	if len(found) == 0 {
		return errors.Join(missing...)
	}
	list, err := c.ListPods(ctx)
	if err != nil {
		return errors.Join(append([]error{err}, missing...)...)
	}
	pods := nonTerminatedPods(list.Items)
	now := time.Now()
	for i := range found {
		if i > 0 {
			fmt.Fprint(s.Out, "\n\n")
		}
		if err := describeNode(s.Out, &found[i], pods, !o.HideEvents, now); err != nil {
			return errors.Join(append([]error{err}, missing...)...)
		}
	}
	return errors.Join(missing...)
}

// nonTerminatedPods are the pods not in phase Succeeded or Failed (kubectl
// describe node's field selector), by namespace and name.
func nonTerminatedPods(in []corev1.Pod) []corev1.Pod {
	out := []corev1.Pod{}
	for _, p := range in {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// describeNode writes kubectl describe node's layout (its describeNode):
// one tab writer, 2 spaces apart, so each run of "key:\tvalue" lines
// aligns as kubectl's does. No Lease, PodCIDR or ProviderID: podhost has
// none.
func describeNode(w io.Writer, n *corev1.Node, pods []corev1.Pod, showEvents bool, now time.Time) error {
	tw := tabwriter.NewWriter(podview.NewTerminalWriter(w), 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "Name:\t%s\n", n.Name)
	fmt.Fprintf(tw, "Roles:\t%s\n", nodeRolesString(n))
	writeMultiline(tw, "Labels", n.Labels, "=")
	writeMultiline(tw, "Annotations", n.Annotations, ": ")
	created := "<unknown>"
	if !n.CreationTimestamp.IsZero() {
		created = n.CreationTimestamp.Format(time.RFC1123Z)
	}
	fmt.Fprintf(tw, "CreationTimestamp:\t%s\n", created)
	writeTaints(tw, n.Spec.Taints)
	fmt.Fprintf(tw, "Unschedulable:\t%v\n", n.Spec.Unschedulable)
	writeNodeConditions(tw, n.Status.Conditions)
	fmt.Fprintln(tw, "Addresses:")
	for _, a := range n.Status.Addresses {
		fmt.Fprintf(tw, "  %s:\t%s\n", a.Type, a.Address)
	}
	writeResourceList(tw, "Capacity", n.Status.Capacity)
	writeResourceList(tw, "Allocatable", n.Status.Allocatable)
	writeSystemInfo(tw, n.Status.NodeInfo)
	allocatable := n.Status.Capacity
	if len(n.Status.Allocatable) > 0 {
		allocatable = n.Status.Allocatable
	}
	writeNodePods(tw, pods, allocatable, now)
	writeAllocated(tw, pods, allocatable)
	if showEvents {
		fmt.Fprintln(tw, "Events:\t<none>")
	}
	return tw.Flush()
}

// writeMultiline is kubectl's printLabelsMultiline (sep "=") and, for
// values on one line, printAnnotationsMultiline (sep ": "): sorted by key,
// the first on the title's line, the others aligned under it; <none> for
// none.
func writeMultiline(w io.Writer, title string, m map[string]string, sep string) {
	if len(m) == 0 {
		fmt.Fprintf(w, "%s:\t<none>\n", title)
		return
	}
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == 0 {
			fmt.Fprintf(w, "%s:\t%s%s%s\n", title, k, sep, m[k])
			continue
		}
		fmt.Fprintf(w, "\t%s%s%s\n", k, sep, m[k])
	}
}

// writeTaints is kubectl's printNodeTaintsMultiline.
func writeTaints(w io.Writer, taints []corev1.Taint) {
	if len(taints) == 0 {
		fmt.Fprintln(w, "Taints:\t<none>")
		return
	}
	for i, t := range taints {
		title := "Taints:"
		if i > 0 {
			title = ""
		}
		fmt.Fprintf(w, "%s\t%s\n", title, t.ToString())
	}
}

// writeNodeConditions writes the Conditions table, times as RFC 1123
// with a numeric zone, as kubectl's.
func writeNodeConditions(w io.Writer, conds []corev1.NodeCondition) {
	if len(conds) == 0 {
		return
	}
	fmt.Fprintln(w, "Conditions:")
	fmt.Fprintln(w, "  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage")
	fmt.Fprintln(w, "  ----\t------\t-----------------\t------------------\t------\t-------")
	for _, c := range conds {
		fmt.Fprintf(w, "  %v \t%v \t%s \t%s \t%v \t%v\n", c.Type, c.Status,
			c.LastHeartbeatTime.Format(time.RFC1123Z), c.LastTransitionTime.Format(time.RFC1123Z), c.Reason, c.Message)
	}
}

// writeResourceList writes a Capacity or Allocatable section: each
// resource by name.
func writeResourceList(w io.Writer, title string, rl corev1.ResourceList) {
	if len(rl) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:\n", title)
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		q := rl[name]
		fmt.Fprintf(w, "  %s:\t%s\n", name, q.String())
	}
}

func writeSystemInfo(w io.Writer, info corev1.NodeSystemInfo) {
	fmt.Fprintln(w, "System Info:")
	for _, kv := range [][2]string{
		{"Machine ID", info.MachineID}, {"System UUID", info.SystemUUID}, {"Boot ID", info.BootID},
		{"Kernel Version", info.KernelVersion}, {"OS Image", info.OSImage}, {"Operating System", info.OperatingSystem},
		{"Architecture", info.Architecture}, {"Container Runtime Version", info.ContainerRuntimeVersion},
		{"Kubelet Version", info.KubeletVersion},
	} {
		fmt.Fprintf(w, "  %s:\t%s\n", kv[0], kv[1])
	}
}

// podResources are a pod's requests and limits as kubectl describe node
// counts them: the effective requests the kubelet admits it with
// (qos.PodRequests) and component-helpers' PodLimits (kubectl's
// PodRequestsAndLimits: sidecars and init containers as the scheduler
// counts them, pod-level resources, overhead).
func podResources(p *corev1.Pod) (reqs, limits corev1.ResourceList) {
	return qos.PodRequests(p), resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
}

// writeNodePods writes the Non-terminated Pods table (with kubectl's empty
// column after Name) with each pod's cpu and memory requests and limits
// and their share of allocatable.
func writeNodePods(w io.Writer, pods []corev1.Pod, allocatable corev1.ResourceList, now time.Time) {
	fmt.Fprintf(w, "Non-terminated Pods:\t(%d in total)\n", len(pods))
	fmt.Fprintln(w, "  Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge")
	fmt.Fprintln(w, "  ---------\t----\t\t------------\t----------\t---------------\t-------------\t---")
	for i := range pods {
		p := &pods[i]
		reqs, limits := podResources(p)
		fmt.Fprintf(w, "  %s\t%s\t\t%s\t%s\t%s\t%s\t%s\n", p.Namespace, p.Name,
			share(reqs, allocatable, corev1.ResourceCPU), share(limits, allocatable, corev1.ResourceCPU),
			share(reqs, allocatable, corev1.ResourceMemory), share(limits, allocatable, corev1.ResourceMemory),
			podview.Age(p, now))
	}
}

// writeAllocated writes the Allocated resources table: the sums over pods
// of cpu, memory and ephemeral-storage requests and limits.
func writeAllocated(w io.Writer, pods []corev1.Pod, allocatable corev1.ResourceList) {
	reqs, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pods {
		r, l := podResources(&pods[i])
		qos.AddList(reqs, r)
		qos.AddList(limits, l)
	}
	fmt.Fprintln(w, "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)")
	fmt.Fprintln(w, "  Resource\tRequests\tLimits")
	fmt.Fprintln(w, "  --------\t--------\t------")
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", name, share(reqs, allocatable, name), share(limits, allocatable, name))
	}
}

// share is kubectl's "<quantity> (<percent>%)": the percentage of
// allocatable, truncated (cpu in millicores, the rest in units); 0% when
// the node has none.
func share(rl, allocatable corev1.ResourceList, name corev1.ResourceName) string {
	q, a := rl[name], allocatable[name]
	value := func(x resource.Quantity) int64 { return x.Value() }
	if name == corev1.ResourceCPU {
		value = func(x resource.Quantity) int64 { return x.MilliValue() }
	}
	pct := int64(0)
	if d := value(a); d != 0 {
		pct = int64(float64(value(q)) / float64(d) * 100)
	}
	return fmt.Sprintf("%s (%d%%)", q.String(), pct)
}
