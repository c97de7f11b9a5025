package kubeapi

import (
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// resource is one resource the server serves: the discovery documents,
// the routes and the OpenAPI documents (tools/kapigen, checked by a test)
// all follow this table.
type resource struct {
	gv           schema.GroupVersion
	name         string // plural, as in the path
	singular     string
	kind         string
	namespaced   bool
	verbs        []string
	shortNames   []string
	categories   []string
	subresources []subresource
}

type subresource struct {
	name  string
	kind  string // the response kind
	verbs []string
}

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	coreGV     = corev1.SchemeGroupVersion
	eventsGV   = eventsv1.SchemeGroupVersion
	authzGV    = authorizationv1.SchemeGroupVersion
	metricsGV  = metricsv1beta1.SchemeGroupVersion
)

// resources: everything served. Pods, ConfigMaps and Secrets are written
// through the manifest dir (the files stay the source of truth); events,
// namespaces and the node are read-only views of the daemon.
var resources = []resource{
	{gv: coreGV, name: "pods", singular: "pod", kind: "Pod", namespaced: true, verbs: writeVerbs,
		shortNames: []string{"po"}, categories: []string{"all"}, subresources: []subresource{
			{"attach", "PodAttachOptions", []string{"create", "get"}},
			{"ephemeralcontainers", "Pod", []string{"get"}},
			{"eviction", "Eviction", []string{"create"}},
			{"exec", "PodExecOptions", []string{"create", "get"}},
			{"log", "Pod", []string{"get"}},
			{"portforward", "PodPortForwardOptions", []string{"create", "get"}},
			{"status", "Pod", []string{"get"}},
		}},
	{gv: coreGV, name: "configmaps", singular: "configmap", kind: "ConfigMap", namespaced: true, verbs: writeVerbs, shortNames: []string{"cm"}},
	{gv: coreGV, name: "secrets", singular: "secret", kind: "Secret", namespaced: true, verbs: writeVerbs},
	{gv: coreGV, name: "events", singular: "event", kind: "Event", namespaced: true, verbs: readVerbs, shortNames: []string{"ev"}},
	{gv: coreGV, name: "namespaces", singular: "namespace", kind: "Namespace", verbs: readVerbs, shortNames: []string{"ns"}},
	{gv: coreGV, name: "nodes", singular: "node", kind: "Node", verbs: readVerbs, shortNames: []string{"no"},
		subresources: []subresource{{"status", "Node", []string{"get"}}}},
	{gv: eventsGV, name: "events", singular: "event", kind: "Event", namespaced: true, verbs: readVerbs, shortNames: []string{"ev"}},
	{gv: authzGV, name: "selfsubjectaccessreviews", singular: "selfsubjectaccessreview", kind: "SelfSubjectAccessReview", verbs: []string{"create"}},
	{gv: authzGV, name: "selfsubjectrulesreviews", singular: "selfsubjectrulesreview", kind: "SelfSubjectRulesReview", verbs: []string{"create"}},
	{gv: metricsGV, name: "nodes", singular: "", kind: "NodeMetrics", verbs: []string{"get", "list"}},
	{gv: metricsGV, name: "pods", singular: "", kind: "PodMetrics", namespaced: true, verbs: []string{"get", "list"}},
}

// groupVersions: the served group-versions in discovery order ("" first).
func groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	for _, r := range resources {
		if !slices.Contains(out, r.gv) {
			out = append(out, r.gv)
		}
	}
	return out
}

// lookup is the served resource gv/name, or nil.
func lookup(gv schema.GroupVersion, name string) *resource {
	for i := range resources {
		if resources[i].gv == gv && resources[i].name == name {
			return &resources[i]
		}
	}
	return nil
}
