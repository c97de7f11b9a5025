package kubeapi

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kind is how the server reads one resource's objects: its hub key, its
// list type, the fields its field selectors may name, and its table.
type kind struct {
	key     string // the hub's kind
	gvk     schema.GroupVersionKind
	newList func() runtime.Object
	// fieldSet: the fields a field selector may name, with the object's
	// values (metadata.name and metadata.namespace are always there).
	fieldSet func(runtime.Object) fields.Set
	table    tableFunc
}

var kinds = map[schema.GroupResource]*kind{
	{Resource: "pods"}: {key: "pods", gvk: coreGV.WithKind("Pod"), newList: func() runtime.Object { return &corev1.PodList{} },
		fieldSet: podFields, table: podTable},
	{Resource: "configmaps"}: {key: "configmaps", gvk: coreGV.WithKind("ConfigMap"), newList: func() runtime.Object { return &corev1.ConfigMapList{} },
		table: configMapTable},
	{Resource: "secrets"}: {key: "secrets", gvk: coreGV.WithKind("Secret"), newList: func() runtime.Object { return &corev1.SecretList{} },
		fieldSet: secretFields, table: secretTable},
	{Resource: "events"}: {key: "events", gvk: coreGV.WithKind("Event"), newList: func() runtime.Object { return &corev1.EventList{} },
		fieldSet: eventFields, table: eventTable},
	{Group: "events.k8s.io", Resource: "events"}: {key: "events.k8s.io", gvk: eventsGV.WithKind("Event"),
		newList: func() runtime.Object { return &eventsv1.EventList{} }, fieldSet: eventsV1Fields, table: defaultTable},
	{Resource: "namespaces"}: {key: "namespaces", gvk: coreGV.WithKind("Namespace"), newList: func() runtime.Object { return &corev1.NamespaceList{} },
		fieldSet: namespaceFields, table: namespaceTable},
	{Resource: "nodes"}: {key: "nodes", gvk: coreGV.WithKind("Node"), newList: func() runtime.Object { return &corev1.NodeList{} },
		table: nodeTable},
}

func podFields(o runtime.Object) fields.Set {
	p := o.(*corev1.Pod)
	return fields.Set{"spec.nodeName": p.Spec.NodeName, "spec.restartPolicy": string(p.Spec.RestartPolicy),
		"spec.schedulerName": p.Spec.SchedulerName, "spec.serviceAccountName": p.Spec.ServiceAccountName,
		"spec.hostNetwork": boolString(p.Spec.HostNetwork), "status.phase": string(p.Status.Phase),
		"status.podIP": p.Status.PodIP, "status.nominatedNodeName": p.Status.NominatedNodeName}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func secretFields(o runtime.Object) fields.Set {
	return fields.Set{"type": string(o.(*corev1.Secret).Type)}
}

func namespaceFields(o runtime.Object) fields.Set {
	return fields.Set{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
}

// eventFields: the API server's event field selectors (kubectl describe
// selects a pod's events by involvedObject).
func eventFields(o runtime.Object) fields.Set {
	e := o.(*corev1.Event)
	io := e.InvolvedObject
	return fields.Set{"involvedObject.kind": io.Kind, "involvedObject.namespace": io.Namespace,
		"involvedObject.name": io.Name, "involvedObject.uid": string(io.UID), "involvedObject.apiVersion": io.APIVersion,
		"involvedObject.resourceVersion": io.ResourceVersion, "involvedObject.fieldPath": io.FieldPath,
		"reason": e.Reason, "reportingComponent": e.ReportingController, "source": e.Source.Component, "type": e.Type}
}

func eventsV1Fields(o runtime.Object) fields.Set {
	e := o.(*eventsv1.Event)
	r := e.Regarding
	return fields.Set{"regarding.kind": r.Kind, "regarding.namespace": r.Namespace, "regarding.name": r.Name,
		"regarding.uid": string(r.UID), "reason": e.Reason, "reportingController": e.ReportingController, "type": e.Type}
}

// selection is a list or watch request's selectors.
type selection struct {
	namespace string
	labels    labels.Selector
	fields    fields.Selector
}

// matches: obj is in the namespace (all with ""), and both selectors match.
func (k *kind) matches(sel selection, obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || sel.namespace != "" && m.GetNamespace() != sel.namespace {
		return false
	}
	if sel.labels != nil && !sel.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if sel.fields == nil || sel.fields.Empty() {
		return true
	}
	set := fields.Set{}
	if k.fieldSet != nil {
		set = k.fieldSet(obj)
	}
	set["metadata.name"], set["metadata.namespace"] = m.GetName(), m.GetNamespace()
	return sel.fields.Matches(set)
}

// fieldsAllowed: every field a selector names is one kind k has.
func (k *kind) fieldsAllowed(sel fields.Selector, sample runtime.Object) (string, bool) {
	set := fields.Set{"metadata.name": "", "metadata.namespace": ""}
	if k.fieldSet != nil {
		for f := range k.fieldSet(sample) {
			set[f] = ""
		}
	}
	for _, r := range sel.Requirements() {
		if _, ok := set[r.Field]; !ok {
			return r.Field, false
		}
	}
	return "", true
}

// sortObjects orders objects by namespace, then name, as the API server
// lists them (etcd's key order).
func sortObjects(objs []runtime.Object) {
	slices.SortFunc(objs, func(a, b runtime.Object) int { return strings.Compare(objectKey(a), objectKey(b)) })
}
