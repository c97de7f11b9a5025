package main

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// served is the Kubernetes API subset podhost serves
// (internal/services/kubeapi): every resource and subresource, with exactly
// the verbs it answers. It is the one place that decides what the generated
// OpenAPI documents describe; kapigen fails if a generated document lists
// another path or verb (check.go), and the server's own discovery table is
// checked against the documents by a test of internal/services/kubeapi.
//
// Verbs are discovery's: get list watch create update patch delete
// deletecollection. Shapes that are not plain verbs:
//   - connect: exec, attach and portforward are upgraded streams that
//     kube-apiserver describes as "connect" operations on GET and POST;
//     discovery lists them as get and create.
//   - options: pods/log is a get whose query is PodLogOptions and whose
//     answer is text/plain.
//   - named: pods/eviction is a create on a named pod with a body of
//     another group (policy/v1 Eviction), as kube-apiserver's.
//
// The shapes, kinds and flags copy kube-apiserver's registry
// (k8s.io/kubernetes pkg/registry/core/pod/...), so that the paths,
// parameters and responses are upstream's for the subset. Checked against
// k8s.io/kubernetes v1.37.2's api/openapi-spec/v3: every operation and
// every schema is the same but for what podhost does not serve (CBOR media
// types, the 401 response) and the enums, which upstream's committed
// documents leave out and a running kube-apiserver serves (OpenAPIEnums).
var served = []resource{
	// core/v1 pods: the manifest dir's pods. delete answers the pod (it
	// terminates), as kube-apiserver's pod storage (ReturnDeletedObject).
	{gv: core, name: "pods", kind: "Pod", list: "PodList", namespaced: true, verbs: all, deleteReturnsObject: true},
	// status: kubectl get --subresource=status. The status is the node's:
	// clients read it, never write it.
	{gv: core, name: "pods/status", kind: "Pod", namespaced: true, verbs: verbs("get")},
	{gv: core, name: "pods/log", kind: "Pod", namespaced: true, verbs: verbs("get"), shape: options, options: "PodLogOptions"},
	{gv: core, name: "pods/exec", kind: "PodExecOptions", namespaced: true, verbs: verbs("get", "create"), shape: connect},
	{gv: core, name: "pods/attach", kind: "PodAttachOptions", namespaced: true, verbs: verbs("get", "create"), shape: connect},
	{gv: core, name: "pods/portforward", kind: "PodPortForwardOptions", namespaced: true, verbs: verbs("get", "create"), shape: connect},
	{gv: core, name: "pods/eviction", kind: "Eviction", namespaced: true, verbs: verbs("create"), shape: named, kindGV: policyV1},
	// ephemeralcontainers: podhost refuses ephemeral containers, but
	// kubectl debug looks the subresource up before it says so; get only.
	{gv: core, name: "pods/ephemeralcontainers", kind: "Pod", namespaced: true, verbs: verbs("get")},

	{gv: core, name: "configmaps", kind: "ConfigMap", list: "ConfigMapList", namespaced: true, verbs: all},
	{gv: core, name: "secrets", kind: "Secret", list: "SecretList", namespaced: true, verbs: all},
	// events in both groups (kubectl describe and kubectl events read
	// core/v1): the pods' events as the node recorded them, read-only.
	{gv: core, name: "events", kind: "Event", list: "EventList", namespaced: true, verbs: read},
	{gv: events, name: "events", kind: "Event", list: "EventList", namespaced: true, verbs: read},

	// cluster-scoped views of the machine.
	{gv: core, name: "namespaces", kind: "Namespace", list: "NamespaceList", verbs: read},
	{gv: core, name: "nodes", kind: "Node", list: "NodeList", verbs: read},
	{gv: core, name: "nodes/status", kind: "Node", verbs: verbs("get")},

	// kubectl auth can-i.
	{gv: authorization, name: "selfsubjectaccessreviews", kind: "SelfSubjectAccessReview", verbs: verbs("create")},
	{gv: authorization, name: "selfsubjectrulesreviews", kind: "SelfSubjectRulesReview", verbs: verbs("create")},

	// the manifests' workloads with their status (podhost get deployments, ...), read-only:
	// they are written through the manifest dir.
	{gv: apps, name: "deployments", kind: "Deployment", list: "DeploymentList", namespaced: true, verbs: read},
	{gv: apps, name: "replicasets", kind: "ReplicaSet", list: "ReplicaSetList", namespaced: true, verbs: read},
	{gv: apps, name: "statefulsets", kind: "StatefulSet", list: "StatefulSetList", namespaced: true, verbs: read},
	{gv: apps, name: "daemonsets", kind: "DaemonSet", list: "DaemonSetList", namespaced: true, verbs: read},
	{gv: batch, name: "jobs", kind: "Job", list: "JobList", namespaced: true, verbs: read},
	{gv: batch, name: "cronjobs", kind: "CronJob", list: "CronJobList", namespaced: true, verbs: read},

	// kubectl top.
	{gv: metrics, name: "pods", kind: "PodMetrics", list: "PodMetricsList", namespaced: true, verbs: verbs("get", "list")},
	{gv: metrics, name: "nodes", kind: "NodeMetrics", list: "NodeMetricsList", verbs: verbs("get", "list")},
}

var (
	core          = schema.GroupVersion{Version: "v1"}
	events        = schema.GroupVersion{Group: "events.k8s.io", Version: "v1"}
	authorization = schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"}
	metrics       = schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	policyV1      = schema.GroupVersion{Group: "policy", Version: "v1"}
	apps          = schema.GroupVersion{Group: "apps", Version: "v1"}
	batch         = schema.GroupVersion{Group: "batch", Version: "v1"}

	read = verbs("get", "list", "watch")
	all  = verbs("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
)

// resource is one served resource or subresource.
type resource struct {
	gv   schema.GroupVersion
	name string // "pods", or "pods/status" for a subresource
	// kind is the object's kind in gv (in kindGV if set), list its list's
	// kind ("" if not listable).
	kind, list string
	kindGV     schema.GroupVersion
	namespaced bool
	verbs      []string
	shape      shape
	// options: the kind of the query object of an options get.
	options string
	// deleteReturnsObject: delete answers the object, not a Status.
	deleteReturnsObject bool
}

type shape int

const (
	plain   shape = iota // the verbs, on the object
	connect              // GET and POST connect (upgraded streams)
	options              // get with a query object
	named                // create with the parent's name
)

func verbs(v ...string) []string { return v }
