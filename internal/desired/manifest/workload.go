package manifest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Workload kinds (apps/v1): each is expanded into the pods its controller
// would create on a one-node cluster (workload_pods.go), and those pods
// are decoded, validated and hashed exactly as a Pod document is.
const (
	KindDeployment  = "Deployment"
	KindReplicaSet  = "ReplicaSet"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindJob         = "Job" // batch/v1 (job.go)
)

// MaxReplicas bounds the pods one workload document declares (memory per
// file stays bounded: the expanded pods are as large as the template).
const MaxReplicas = 250

// workloadKinds maps a workload kind to its Go type; apiVersion apps/v1.
var workloadKinds = map[string]reflect.Type{
	KindDeployment:  reflect.TypeFor[appsv1.Deployment](),
	KindReplicaSet:  reflect.TypeFor[appsv1.ReplicaSet](),
	KindStatefulSet: reflect.TypeFor[appsv1.StatefulSet](),
	KindDaemonSet:   reflect.TypeFor[appsv1.DaemonSet](),
	KindJob:         reflect.TypeFor[batchv1.Job](),
	KindCronJob:     reflect.TypeFor[batchv1.CronJob](),
}

// Workload is one workload document and the pods it expands into. Exactly
// one of the typed objects is set (namespace defaulted, replicas defaulted
// to 1, the config-source annotation set).
type Workload struct {
	Kind        string
	Deployment  *appsv1.Deployment
	ReplicaSet  *appsv1.ReplicaSet
	StatefulSet *appsv1.StatefulSet
	DaemonSet   *appsv1.DaemonSet
	Job         *batchv1.Job
	CronJob     *batchv1.CronJob // batch/v1 (cronjob.go)
	// Pods are the pods its controller would create, in ordinal order
	// (also in Objects.Pods); a Job's first ones (JobPod makes the rest).
	Pods []*corev1.Pod

	tmpl     map[string]any // a Job's template document (JobPod)
	cronTmpl map[string]any // a CronJob's jobTemplate document (CronJobRun)
	file     string
}

// Meta is the workload's object metadata.
func (w *Workload) Meta() *metav1.ObjectMeta {
	switch {
	case w.Deployment != nil:
		return &w.Deployment.ObjectMeta
	case w.ReplicaSet != nil:
		return &w.ReplicaSet.ObjectMeta
	case w.StatefulSet != nil:
		return &w.StatefulSet.ObjectMeta
	case w.Job != nil:
		return &w.Job.ObjectMeta
	case w.CronJob != nil:
		return &w.CronJob.ObjectMeta
	default:
		return &w.DaemonSet.ObjectMeta
	}
}

// workloadShape is what every workload kind has in common: the fields of
// its spec the expansion uses.
type workloadShape struct {
	meta     *metav1.ObjectMeta
	replicas *int32
	selector *metav1.LabelSelector
	template *corev1.PodTemplateSpec
}

// decodeWorkload decodes one workload document into its typed object,
// defaults and validates it, and expands it into pods.
func decodeWorkload(file, kind string, obj map[string]any, budget *int64) (*Workload, errs) {
	var e errs
	group := "apps/v1"
	if kind == KindJob || kind == KindCronJob {
		group = "batch/v1"
	}
	if v, _ := obj["apiVersion"].(string); v != group {
		e.add("apiVersion", "Unsupported value: %s: supported values: %q for a %s", describe(obj["apiVersion"]), group, kind)
		return nil, e
	}
	if checkSchema(obj, workloadKinds[kind], nil, &e); len(e) > 0 {
		return nil, e
	}
	w := &Workload{Kind: kind}
	var into any
	switch kind {
	case KindDeployment:
		w.Deployment = &appsv1.Deployment{}
		into = w.Deployment
	case KindReplicaSet:
		w.ReplicaSet = &appsv1.ReplicaSet{}
		into = w.ReplicaSet
	case KindStatefulSet:
		w.StatefulSet = &appsv1.StatefulSet{}
		into = w.StatefulSet
	case KindJob:
		w.Job = &batchv1.Job{}
		into = w.Job
	case KindCronJob:
		w.CronJob = &batchv1.CronJob{}
		into = w.CronJob
	default:
		w.DaemonSet = &appsv1.DaemonSet{}
		into = w.DaemonSet
	}
	if err := decodeCanonical(obj, into); err != nil {
		e.add("", "decode %s: %s", kind, err)
		return nil, e
	}
	if w.Job != nil {
		return decodeJob(file, w, obj, budget)
	}
	if w.CronJob != nil {
		return decodeCronJob(file, w, obj, budget)
	}
	s := w.shape()
	if s.meta.Namespace == "" {
		s.meta.Namespace = defaultNamespace
	}
	if s.replicas == nil && kind != KindDaemonSet {
		s.replicas = ptr(int32(1))
		w.setReplicas(s.replicas)
	}
	var all field.ErrorList
	all = append(all, validateMeta(s.meta, field.NewPath("metadata"))...)
	all = append(all, validateShape(s)...)
	all = append(all, w.refusedFields()...)
	all = append(all, w.validateStrategy()...)
	e.addField(all)
	if len(e) > 0 {
		return nil, e
	}
	pods, pe := expandPods(file, w, obj, budget)
	if len(pe) > 0 {
		return nil, pe
	}
	w.Pods = pods
	setSource(s.meta, file)
	return w, nil
}

func (w *Workload) shape() workloadShape {
	switch {
	case w.Deployment != nil:
		d := w.Deployment
		return workloadShape{&d.ObjectMeta, d.Spec.Replicas, d.Spec.Selector, &d.Spec.Template}
	case w.ReplicaSet != nil:
		r := w.ReplicaSet
		return workloadShape{&r.ObjectMeta, r.Spec.Replicas, r.Spec.Selector, &r.Spec.Template}
	case w.StatefulSet != nil:
		s := w.StatefulSet
		return workloadShape{&s.ObjectMeta, s.Spec.Replicas, s.Spec.Selector, &s.Spec.Template}
	case w.Job != nil:
		j := w.Job
		return workloadShape{&j.ObjectMeta, ptr(jobInitialPods(j)), j.Spec.Selector, &j.Spec.Template}
	default:
		d := w.DaemonSet
		return workloadShape{&d.ObjectMeta, ptr(int32(1)), d.Spec.Selector, &d.Spec.Template}
	}
}

func (w *Workload) setReplicas(n *int32) {
	switch {
	case w.Deployment != nil:
		w.Deployment.Spec.Replicas = n
	case w.ReplicaSet != nil:
		w.ReplicaSet.Spec.Replicas = n
	case w.StatefulSet != nil:
		w.StatefulSet.Spec.Replicas = n
	}
}

// validateShape checks replicas, the selector and the template's labels
// as the API server does (a selector that does not select the template
// would make the controller create pods forever).
func validateShape(s workloadShape) field.ErrorList {
	var all field.ErrorList
	spec := field.NewPath("spec")
	if r := *s.replicas; r < 0 || r > MaxReplicas {
		all = append(all, field.Invalid(spec.Child("replicas"), r, fmt.Sprintf("must be between 0 and %d on one node", MaxReplicas)))
	}
	if s.selector == nil {
		return append(all, field.Required(spec.Child("selector"), ""))
	}
	sel, err := metav1.LabelSelectorAsSelector(s.selector)
	switch {
	case err != nil:
		all = append(all, field.Invalid(spec.Child("selector"), s.selector.String(), err.Error()))
	case sel.Empty():
		all = append(all, field.Invalid(spec.Child("selector"), s.selector.String(), "empty selector is invalid for a workload"))
	case !sel.Matches(labels.Set(s.template.Labels)):
		all = append(all, field.Invalid(spec.Child("template", "metadata", "labels"), s.template.Labels, "`selector` does not match template `labels`"))
	}
	if ns := s.template.Namespace; ns != "" && ns != s.meta.Namespace {
		all = append(all, field.Invalid(spec.Child("template", "metadata", "namespace"), ns, "must be empty or the workload's namespace"))
	}
	return all
}

// refusedFields are the workload fields one node cannot honour
// (docs/fields.md, the workload rows).
func (w *Workload) refusedFields() field.ErrorList {
	var all field.ErrorList
	spec := field.NewPath("spec")
	switch {
	case w.Deployment != nil:
		if w.Deployment.Spec.Paused {
			all = append(all, forbidden(spec.Child("paused"), "a paused Deployment (its template is the pods' now: edit the file when ready) is"))
		}
	case w.StatefulSet != nil:
		if len(w.StatefulSet.Spec.VolumeClaimTemplates) > 0 {
			all = append(all, forbidden(spec.Child("volumeClaimTemplates"), "volumeClaimTemplates (no volume provisioner on one node: use a hostPath volume in the template) is"))
		}
		if o := w.StatefulSet.Spec.Ordinals; o != nil && o.Start < 0 {
			all = append(all, field.Invalid(spec.Child("ordinals", "start"), o.Start, "must be greater than or equal to 0"))
		}
		all = append(all, validateStatefulSetName(w.StatefulSet)...)
		switch p := w.StatefulSet.Spec.PodManagementPolicy; p {
		case "", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
		default:
			all = append(all, field.NotSupported(spec.Child("podManagementPolicy"), p, []string{string(appsv1.OrderedReadyPodManagement), string(appsv1.ParallelPodManagement)}))
		}
	}
	return all
}

// checkWorkloadKind reports whether kind is a workload kind.
func isWorkloadKind(kind string) bool {
	_, ok := workloadKinds[kind]
	return ok
}

// workloadKindList names the workload kinds, for errors.
func workloadKindList() string {
	return strings.Join([]string{KindDeployment, KindReplicaSet, KindStatefulSet, KindDaemonSet, KindJob, KindCronJob}, ", ")
}

// addWorkload decodes a workload document into o: the workload, and its
// pods among the file's pods (each checked for a unique name and UID).
func (o *Objects) addWorkload(file, kind string, obj map[string]any, docNum int, seen map[string]int) errs {
	w, e := decodeWorkload(file, kind, obj, &o.expanded)
	if w == nil {
		return e
	}
	e = append(e, checkUniqueData(kind, w.Meta().Namespace+"/"+w.Meta().Name, docNum, seen)...)
	for _, p := range w.Pods {
		if pe := checkUnique(p, docNum, seen); len(pe) > 0 {
			return append(e, pe...)
		}
	}
	o.Workloads = append(o.Workloads, w)
	o.Pods = append(o.Pods, w.Pods...)
	return e
}

// validateStatefulSetName: a StatefulSet's pods are NAME-ORDINAL, and so
// are their hostnames, which must be DNS labels (63 characters, no dots).
func validateStatefulSetName(set *appsv1.StatefulSet) field.ErrorList {
	last := int64(0)
	if set.Spec.Ordinals != nil {
		last = int64(set.Spec.Ordinals.Start)
	}
	if set.Spec.Replicas != nil && *set.Spec.Replicas > 0 {
		last += int64(*set.Spec.Replicas) - 1
	}
	host := set.Name + "-" + strconv.FormatInt(last, 10)
	if msgs := validation.IsDNS1123Label(host); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), set.Name,
			"a StatefulSet's pods have the hostname NAME-ORDINAL ("+host+"): "+msgs[0])}
	}
	return nil
}
