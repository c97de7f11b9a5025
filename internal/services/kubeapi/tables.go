package kubeapi

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podhost/podhost/internal/model/podview"
)

// The server-side tables kubectl get prints, with the API server's columns
// (k8s.io/kubernetes pkg/printers/internalversion: printPod, printNode,
// printEvent, ...); Priority 1 columns are shown with -o wide.

// tableFunc is one kind's column definitions and a row per object.
type tableFunc struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition)
}

func col(name string, priority int32) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: "string", Priority: priority}
	if name == "Name" {
		c.Format = "name"
	}
	return c
}

func cols(names ...string) []metav1.TableColumnDefinition {
	var out []metav1.TableColumnDefinition
	for _, n := range names {
		p := int32(0)
		if rest, ok := strings.CutPrefix(n, "+"); ok {
			n, p = rest, 1
		}
		out = append(out, col(n, p))
	}
	return out
}

// toTable is objs as a Table; includeObject says what each row carries
// (Metadata by default: kubectl computes --show-labels and -L from it).
func (t tableFunc) toTable(objs []runtime.Object, rv string, includeObject metav1.IncludeObjectPolicy, now time.Time) *metav1.Table {
	tbl := &metav1.Table{ColumnDefinitions: t.columns}
	tbl.ResourceVersion = rv
	for _, o := range objs {
		cells, conds := t.cells(o, now)
		row := metav1.TableRow{Cells: cells, Conditions: conds}
		switch includeObject {
		case metav1.IncludeObject:
			row.Object.Object = o
		case metav1.IncludeNone:
		default:
			row.Object.Object = partial(o)
		}
		tbl.Rows = append(tbl.Rows, row)
	}
	return tbl
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

var podTable = tableFunc{
	columns: cols("Name", "Ready", "Status", "Restarts", "Age", "+IP", "+Node", "+Nominated Node", "+Readiness Gates"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		p := o.(*corev1.Pod)
		row := podview.Row(p, false, now)
		ip, node, nominated := orNone(p.Status.PodIP), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName)
		gates := "<none>"
		if n := len(p.Spec.ReadinessGates); n > 0 {
			ok := 0
			for _, g := range p.Spec.ReadinessGates {
				for _, c := range p.Status.Conditions {
					if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
						ok++
					}
				}
			}
			gates = fmt.Sprintf("%d/%d", ok, n)
		}
		var conds []metav1.TableRowCondition
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			conds = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
				Reason: string(p.Status.Phase), Message: fmt.Sprintf("The pod has %s", strings.ToLower(string(p.Status.Phase)))}}
		}
		return []any{row[0], row[1], row[2], row[3], row[4], ip, node, nominated, gates}, conds
	},
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

var configMapTable = tableFunc{
	columns: cols("Name", "Data", "Age"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		c := o.(*corev1.ConfigMap)
		return []any{c.Name, int64(len(c.Data) + len(c.BinaryData)), age(c.CreationTimestamp, now)}, nil
	},
}

var secretTable = tableFunc{
	columns: cols("Name", "Type", "Data", "Age"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		s := o.(*corev1.Secret)
		return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}, nil
	},
}

var namespaceTable = tableFunc{
	columns: cols("Name", "Status", "Age"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		n := o.(*corev1.Namespace)
		return []any{n.Name, string(n.Status.Phase), age(n.CreationTimestamp, now)}, nil
	},
}

var nodeTable = tableFunc{
	columns: cols("Name", "Status", "Roles", "Age", "Version", "+Internal-IP", "+External-IP", "+OS-Image", "+Kernel-Version", "+Container-Runtime"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		n := o.(*corev1.Node)
		status := "Unknown"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				status = map[bool]string{true: "Ready", false: "NotReady"}[c.Status == corev1.ConditionTrue]
			}
		}
		if n.Spec.Unschedulable {
			status += ",SchedulingDisabled"
		}
		addr := func(t corev1.NodeAddressType) string {
			for _, a := range n.Status.Addresses {
				if a.Type == t {
					return a.Address
				}
			}
			return "<none>"
		}
		ni := n.Status.NodeInfo
		return []any{n.Name, status, nodeRoles(n), age(n.CreationTimestamp, now), ni.KubeletVersion,
			addr(corev1.NodeInternalIP), addr(corev1.NodeExternalIP), ni.OSImage, ni.KernelVersion, ni.ContainerRuntimeVersion}, nil
	},
}

// nodeRoles as kubectl's findNodeRoles: node-role.kubernetes.io/<role>
// labels and kubernetes.io/role.
func nodeRoles(n *corev1.Node) string {
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" {
				roles = append(roles, r)
			}
		case k == "kubernetes.io/role" && v != "":
			roles = append(roles, v)
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	sort.Strings(roles)
	return strings.Join(slices.Compact(roles), ",")
}

var eventTable = tableFunc{
	columns: cols("Last Seen", "Type", "Reason", "Object", "Message", "+Subobject", "+Source", "+First Seen", "+Count", "+Name"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		e := o.(*corev1.Event)
		first, last := age(e.FirstTimestamp, now), age(e.LastTimestamp, now)
		if e.Count > 1 {
			last = fmt.Sprintf("%s (x%d over %s)", last, e.Count, first)
		}
		obj := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		src := e.Source.Component
		if e.Source.Host != "" {
			src += ", " + e.Source.Host
		}
		return []any{last, e.Type, e.Reason, obj, strings.TrimSpace(e.Message), e.InvolvedObject.FieldPath, src,
			first, int64(e.Count), e.Name}, nil
	},
}

// defaultTable is the API server's default for a kind without a printer.
var defaultTable = tableFunc{
	columns: []metav1.TableColumnDefinition{col("Name", 0), {Name: "Created At", Type: "date"}},
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		m, _ := meta.Accessor(o)
		return []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}, nil
	},
}

// partial is o's metadata as a PartialObjectMetadata.
func partial(o runtime.Object) *metav1.PartialObjectMetadata {
	pom := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
	if a, ok := o.(metav1.ObjectMetaAccessor); ok {
		if om, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			pom.ObjectMeta = *om
		}
	}
	return pom
}
