package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/model/podview"
)

// Node role labels, kubectl's (findNodeRoles).
const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	labelNodeRole       = "kubernetes.io/role"
)

// GetNodes prints podhost's node (the machine itself, from the daemon) as
// kubectl get nodes: the table (NAME STATUS ROLES AGE VERSION, more with
// wide, then the label columns), -o json|yaml (the Node for one name, else
// a v1 List), name, jsonpath and custom-columns. Nodes are cluster-scoped:
// o.Namespace is not looked at. -l selects by the node's labels; a name
// that is not the node's is a NotFoundError, as in Get.
func GetNodes(ctx context.Context, o GetOptions, s cmdutil.IOStreams) error {
	if err := o.validateNodes(); err != nil {
		return err
	}
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return fmt.Errorf("unable to parse the label selector %q: %w", o.Selector, err)
	}
	node, err := cmdutil.NewClient(o.Socket, s).Node(ctx)
	if err != nil {
		return err
	}
	nodes := []corev1.Node{}
	if sel.Matches(labels.Set(node.Labels)) {
		nodes = append(nodes, *node)
	}
	nodes, missing := cmdutil.ByName(nodes, o.Names, func(n *corev1.Node) string { return n.Name }, "nodes")
	if len(missing) > 0 && len(o.Names) == 1 {
		return missing[0]
	}
	return errors.Join(append([]error{o.printNodes(nodes, len(missing) > 0, s)}, missing...)...)
}

// validateNodes checks get's flags for nodes before the daemon is asked:
// pods' flags aside (--watch, --sort-by), as validate.
func (o GetOptions) validateNodes() error {
	switch {
	case o.Watch:
		return errors.New("--watch: podhost watches pods, not nodes")
	case o.SortBy != "":
		return errors.New("--sort-by: podhost supports it for pods, not nodes")
	case strings.TrimSpace(o.Selector) != "" && len(o.Names) > 0:
		return errNameAndSelector
	case slices.Contains(o.Names, ""):
		return cmdutil.ErrEmptyName
	}
	return o.validateOutput()
}

// printNodes writes nodes in o's output format; "No resources found" when
// there are none, unless names were missing (their errors say it).
func (o GetOptions) printNodes(nodes []corev1.Node, missing bool, s cmdutil.IOStreams) error {
	if done, err := printStructured(o, s, nodes, o.listOrNode(nodes)); done {
		return err
	}
	switch o.Output {
	case "name":
		for _, n := range nodes {
			fmt.Fprintln(s.Out, "node/"+n.Name)
		}
		return nil
	}
	if len(nodes) == 0 {
		if !missing {
			fmt.Fprintln(s.ErrOut, "No resources found")
		}
		return nil
	}
	return writeNodeTable(s.Out, o, nodes, time.Now())
}

// listOrNode is what -o json/yaml/jsonpath print: the node when one name
// was given, else a List (as listOrPod).
func (o GetOptions) listOrNode(nodes []corev1.Node) any {
	if len(o.Names) == 1 && len(nodes) == 1 {
		return &nodes[0]
	}
	return &corev1.NodeList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: nodes}
}

// writeNodeTable writes kubectl's node table (its printNode): NAME STATUS
// ROLES AGE VERSION, with wide INTERNAL-IP EXTERNAL-IP OS-IMAGE
// KERNEL-VERSION CONTAINER-RUNTIME, then the label columns.
func writeNodeTable(w io.Writer, o GetOptions, nodes []corev1.Node, now time.Time) error {
	wide := o.Output == "wide"
	header := []string{"NAME", "STATUS", "ROLES", "AGE", "VERSION"}
	if wide {
		header = append(header, "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME")
	}
	rows := make([][]string, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		info := n.Status.NodeInfo
		r := []string{n.Name, nodeStatus(n), nodeRolesString(n), podview.AgeSince(n.CreationTimestamp.Time, now), info.KubeletVersion}
		if wide {
			r = append(r, nodeAddress(n, corev1.NodeInternalIP), nodeAddress(n, corev1.NodeExternalIP),
				orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion))
		}
		rows[i] = append(r, printers.LabelCells(n.Labels, o.LabelColumns, o.ShowLabels)...)
	}
	return printers.Table(w, append(header, printers.LabelHeaders(o.LabelColumns, o.ShowLabels)...), rows, o.NoHeaders)
}

// nodeStatus is kubectl's STATUS of a node: Ready, NotReady or Unknown
// (no Ready condition), then SchedulingDisabled when it is unschedulable.
func nodeStatus(n *corev1.Node) string {
	status := []string{"Unknown"}
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		status[0] = string(c.Type)
		if c.Status != corev1.ConditionTrue {
			status[0] = "Not" + string(c.Type)
		}
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	return strings.Join(status, ",")
}

// nodeRoles are kubectl's node roles: the names after
// node-role.kubernetes.io/ of the node's labels and the value of
// kubernetes.io/role, sorted, without repeats.
func nodeRoles(n *corev1.Node) []string {
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				roles = append(roles, role)
			}
		case k == labelNodeRole && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// nodeRolesString is the ROLES column (and describe's Roles): the roles
// joined by ",", <none> for none.
func nodeRolesString(n *corev1.Node) string {
	if roles := nodeRoles(n); len(roles) > 0 {
		return strings.Join(roles, ",")
	}
	return "<none>"
}

// nodeAddress is the node's first address of type t, <none> if it has none.
func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
