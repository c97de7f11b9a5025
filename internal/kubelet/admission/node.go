package admission

import (
	"runtime"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Rejections on the node's labels, the kubelet's (pkg/kubelet/lifecycle/
// predicate.go; the NodeAffinity message is its PredicateFailureError for
// the scheduler plugin's ErrReasonPod).
const (
	ReasonOSSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch"
	MessageOSSelector        = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	ReasonNodeAffinity       = "NodeAffinity"
	MessageNodeAffinity      = "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	insufficientPrefix       = "OutOf" // the kubelet's InsufficientResourcePrefix
)

// Node is this machine as admission sees it: its name, the labels a
// kubelet would put on its Node object and its allocatable.
type Node struct {
	Name        string
	Labels      map[string]string
	Allocatable corev1.ResourceList
	// AppArmor: the host has AppArmor enabled (else a pod asking for a
	// profile is rejected, apparmor.go).
	AppArmor bool
}

// NodeLabels are the labels the kubelet's initialNode
// (pkg/kubelet/kubelet_node_status.go) gives its Node: hostname, os and
// arch (stable and beta keys), then extra (its --node-labels, podhost's
// nodeLabels) over them.
func NodeLabels(hostname string, extra map[string]string) map[string]string {
	labels := map[string]string{
		corev1.LabelHostname:      hostname,
		corev1.LabelOSStable:      runtime.GOOS,
		corev1.LabelArchStable:    runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for k, v := range extra {
		labels[k] = v
	}
	return labels
}

// NodeName is the kubelet's node name for hostname (nodeutil.GetHostname:
// trimmed, lower case): the node the labels name, and every pod's
// spec.nodeName (the kubelet's config.applyDefaults sets it).
func NodeName(hostname string) string { return strings.ToLower(strings.TrimSpace(hostname)) }

// Admit is the kubelet's predicate admission on this node, in its order:
// the pod's kubernetes.io/os label against the node's, then resources
// (Admit), the required node affinity and nodeSelector, then host ports;
// then its AppArmor admission.
func (n Node) Admit(pod *corev1.Pod, admitted []*corev1.Pod) Result {
	// The node's os label is GOOS whatever it says (rejectPodAdmissionBasedOnOSSelector).
	if os, ok := pod.Labels[corev1.LabelOSStable]; ok && os != runtime.GOOS {
		return Result{Reason: ReasonOSSelectorMismatch, Message: MessageOSSelector}
	}
	r := Admit(pod, n.Allocatable, admitted)
	if !r.Admit && strings.HasPrefix(r.Reason, insufficientPrefix) {
		return r // resources are checked before node affinity (scheduler.AdmissionCheck)
	}
	node := &corev1.Node{}
	node.Name, node.Labels = n.Name, n.Labels
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
		return Result{Reason: ReasonNodeAffinity, Message: MessageNodeAffinity}
	}
	if !r.Admit {
		return r
	}
	return admitAppArmor(pod, n.AppArmor) // the kubelet's next admit handler
}
