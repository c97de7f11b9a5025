package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// testNode is a node as the daemon builds it, booted 3d4h before now.
func testNode(now time.Time) *corev1.Node {
	n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}}
	n.Name = "host1"
	n.Labels = map[string]string{"kubernetes.io/hostname": "host1", "kubernetes.io/os": "linux", "tier": "edge"}
	n.CreationTimestamp = metav1.NewTime(now.Add(-(76 * time.Hour)))
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("90Gi")}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "podhost is posting ready status", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "host1"}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: "m1", SystemUUID: "u1", BootID: "b1", KernelVersion: "6.12.0-1-amd64",
		OSImage: "Debian GNU/Linux 13 (trixie)", OperatingSystem: "linux", Architecture: "amd64",
		ContainerRuntimeVersion: "containerd://v2.1.4", KubeletVersion: "v0.3.0"}
	return n
}

func TestNodeTable(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	nodes := []corev1.Node{*testNode(now)}
	for _, tc := range []struct {
		o    GetOptions
		want string
	}{
		{GetOptions{Namespace: "default"}, "" +
			"NAME    STATUS   ROLES    AGE    VERSION\n" +
			"host1   Ready    <none>   3d4h   v0.3.0\n"},
		{GetOptions{Namespace: "default", Output: "wide"}, "" +
			"NAME    STATUS   ROLES    AGE    VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE                       KERNEL-VERSION   CONTAINER-RUNTIME\n" +
			"host1   Ready    <none>   3d4h   v0.3.0    10.0.0.5      <none>        Debian GNU/Linux 13 (trixie)   6.12.0-1-amd64   containerd://v2.1.4\n"},
		{GetOptions{Namespace: "default", LabelColumns: []string{"tier", "kubernetes.io/os", "zone"}, ShowLabels: true, NoHeaders: true},
			"host1   Ready   <none>   3d4h   v0.3.0   edge   linux      kubernetes.io/hostname=host1,kubernetes.io/os=linux,tier=edge\n"},
	} {
		var out bytes.Buffer
		if err := writeNodeTable(&out, tc.o, nodes, now); err != nil || out.String() != tc.want {
			t.Errorf("%+v: %v\n%s\nwant\n%s", tc.o, err, out.String(), tc.want)
		}
	}
}

// STATUS and ROLES as kubectl's printNode.
func TestNodeStatusAndRoles(t *testing.T) {
	n := testNode(time.Now())
	n.Spec.Unschedulable = true
	if got := nodeStatus(n); got != "Ready,SchedulingDisabled" {
		t.Errorf("unschedulable: %q", got)
	}
	n.Spec.Unschedulable = false
	n.Status.Conditions[0].Status = corev1.ConditionFalse
	if got := nodeStatus(n); got != "NotReady" {
		t.Errorf("not ready: %q", got)
	}
	n.Status.Conditions = nil
	if got := nodeStatus(n); got != "Unknown" {
		t.Errorf("no conditions: %q", got)
	}
	n.Labels["node-role.kubernetes.io/edge"] = ""
	n.Labels["node-role.kubernetes.io/control-plane"] = "true"
	n.Labels["kubernetes.io/role"] = "edge"
	n.Labels["node-role.kubernetes.io/"] = ""
	if got := nodeRolesString(n); got != "control-plane,edge" {
		t.Errorf("roles: %q", got)
	}
}

func TestGetNodes(t *testing.T) {
	d := &clienttest.FakeDaemon{NodeObject: testNode(time.Now()), RuntimeStatus: api.RuntimeStatus{Healthy: true}}
	sock := serve(t, d)
	for _, tc := range []struct {
		o              GetOptions
		stdout, stderr string
		err            string
	}{
		{o: GetOptions{Names: []string{"host1", "nope"}, Namespace: "kube-system", NoHeaders: true},
			stdout: "host1   Ready   <none>   3d4h   v0.3.0\n", err: `nodes "nope" not found`},
		{o: GetOptions{Namespace: "default", Names: []string{"nope"}}, err: `nodes "nope" not found`},
		{o: GetOptions{Namespace: "default", Output: "name"}, stdout: "node/host1\n"},
		{o: GetOptions{Namespace: "default", Names: []string{"host1"}, Output: "jsonpath={.status.nodeInfo.kubeletVersion}"}, stdout: "v0.3.0"},
		{o: GetOptions{Namespace: "default", Output: "jsonpath={.kind} {.items[0].metadata.name}"}, stdout: "List host1"},
		{o: GetOptions{Namespace: "default", Output: "custom-columns=NAME:.metadata.name,IP:.status.addresses[0].address"}, stdout: "NAME    IP\nhost1   10.0.0.5\n"},
		{o: GetOptions{Namespace: "default", Selector: "tier=edge", Output: "name"}, stdout: "node/host1\n"},
		{o: GetOptions{Namespace: "default", Selector: "tier in (core)"}, stderr: "No resources found\n"},
		{o: GetOptions{Namespace: "default", Selector: "tier in (a"}, err: `unable to parse the label selector "tier in (a"`},
		{o: GetOptions{Namespace: "default", Watch: true}, err: "--watch: podhost watches pods, not nodes"},
		{o: GetOptions{Namespace: "default", SortBy: ".metadata.name"}, err: "--sort-by: podhost supports it for pods, not nodes"},
		{o: GetOptions{Namespace: "default", Output: "yaml", ShowLabels: true}, err: "--show-labels option cannot be used with yaml printer"},
		{o: GetOptions{Namespace: "default", Output: "table"}, err: `unable to match a printer suitable for the output format "table"`},
		{o: GetOptions{Namespace: "default", Names: []string{"host1"}, Selector: "tier=edge"}, err: errNameAndSelector.Error()},
		{o: GetOptions{Namespace: "default", Names: []string{""}}, err: cmdutil.ErrEmptyName.Error()},
	} {
		var out, errOut bytes.Buffer
		tc.o.Socket = sock
		err := GetNodes(context.Background(), tc.o, cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
		if (tc.err == "") != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), tc.err) || out.String() != tc.stdout || errOut.String() != tc.stderr {
			t.Errorf("%+v: %v, stdout %q, stderr %q; want %q, %q, %q", tc.o, err, out.String(), errOut.String(), tc.err, tc.stdout, tc.stderr)
		}
		var nf *cmdutil.NotFoundError
		if strings.HasSuffix(tc.err, "not found") && (!errors.As(err, &nf) || nf.Resource != "nodes") {
			t.Errorf("%+v: %v is not a cmdutil.NotFoundError for nodes", tc.o, err)
		}
	}
	// json: a List without a name, the Node with one (as pods).
	for _, tc := range []struct {
		names []string
		kind  string
	}{{nil, "List"}, {[]string{"host1"}, "Node"}} {
		var out bytes.Buffer
		if err := GetNodes(context.Background(), GetOptions{Namespace: "default", Socket: sock, Names: tc.names, Output: "json"}, cmdutil.IOStreams{Out: &out}); err != nil {
			t.Fatal(err)
		}
		var obj struct {
			APIVersion, Kind string
			Items            []corev1.Node
		}
		if err := json.Unmarshal(out.Bytes(), &obj); err != nil || obj.APIVersion != "v1" || obj.Kind != tc.kind || tc.kind == "List" && len(obj.Items) != 1 {
			t.Errorf("-o json %q: %v\n%s", tc.names, err, out.String())
		}
	}
}
