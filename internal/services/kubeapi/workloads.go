package kubeapi

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The workload kinds (apps/v1 Deployments, ReplicaSets, StatefulSets,
// DaemonSets; batch/v1 Jobs, CronJobs), read-only: the manifests' workloads with the
// status their controllers would report. They are written through the
// manifest dir (podhost apply), not the API.

// Workloads is what a Backend offers for the workload kinds; a Backend
// without it serves them empty.
type Workloads interface {
	// Workloads: every workload of the manifests, typed (*appsv1.Deployment,
	// ..., *batchv1.Job), with status.
	Workloads() []runtime.Object
}

var (
	appsGV  = appsv1.SchemeGroupVersion
	batchGV = batchv1.SchemeGroupVersion
)

// workloadResources are the served workload resources (the resources table).
var workloadResources = []resource{
	{gv: appsGV, name: "deployments", singular: "deployment", kind: "Deployment", namespaced: true, verbs: readVerbs,
		shortNames: []string{"deploy"}, categories: []string{"all"}},
	{gv: appsGV, name: "replicasets", singular: "replicaset", kind: "ReplicaSet", namespaced: true, verbs: readVerbs,
		shortNames: []string{"rs"}, categories: []string{"all"}},
	{gv: appsGV, name: "statefulsets", singular: "statefulset", kind: "StatefulSet", namespaced: true, verbs: readVerbs,
		shortNames: []string{"sts"}, categories: []string{"all"}},
	{gv: appsGV, name: "daemonsets", singular: "daemonset", kind: "DaemonSet", namespaced: true, verbs: readVerbs,
		shortNames: []string{"ds"}, categories: []string{"all"}},
	{gv: batchGV, name: "jobs", singular: "job", kind: "Job", namespaced: true, verbs: readVerbs, categories: []string{"all"}},
	{gv: batchGV, name: "cronjobs", singular: "cronjob", kind: "CronJob", namespaced: true, verbs: readVerbs,
		shortNames: []string{"cj"}, categories: []string{"all"}},
}

// workloadKinds are their kinds (the kinds table): hub key "<resource>.<group>".
var workloadKinds = map[string]*kind{
	"deployments":  {key: "deployments.apps", gvk: appsGV.WithKind("Deployment"), newList: func() runtime.Object { return &appsv1.DeploymentList{} }, table: deploymentTable},
	"replicasets":  {key: "replicasets.apps", gvk: appsGV.WithKind("ReplicaSet"), newList: func() runtime.Object { return &appsv1.ReplicaSetList{} }, table: replicaSetTable},
	"statefulsets": {key: "statefulsets.apps", gvk: appsGV.WithKind("StatefulSet"), newList: func() runtime.Object { return &appsv1.StatefulSetList{} }, table: statefulSetTable},
	"daemonsets":   {key: "daemonsets.apps", gvk: appsGV.WithKind("DaemonSet"), newList: func() runtime.Object { return &appsv1.DaemonSetList{} }, table: daemonSetTable},
	"jobs":         {key: "jobs.batch", gvk: batchGV.WithKind("Job"), newList: func() runtime.Object { return &batchv1.JobList{} }, table: jobTable},
	"cronjobs":     {key: "cronjobs.batch", gvk: batchGV.WithKind("CronJob"), newList: func() runtime.Object { return &batchv1.CronJobList{} }, table: cronJobTable},
}

func init() {
	resources = append(resources, workloadResources...)
	for name, k := range workloadKinds {
		kinds[k.gvk.GroupVersion().WithResource(name).GroupResource()] = k
	}
}

// workloadSources are the hub's sources of the workload kinds: b's
// workloads of each Go type.
func workloadSources(b Backend, sources map[string]source) {
	all := func() []runtime.Object {
		if w, ok := b.(Workloads); ok {
			return w.Workloads()
		}
		return nil
	}
	for _, k := range workloadKinds {
		gvk := k.gvk
		sources[k.key] = func() []runtime.Object {
			var out []runtime.Object
			for _, o := range all() {
				if o.GetObjectKind().GroupVersionKind() == gvk {
					out = append(out, o)
				}
			}
			return out
		}
	}
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

func containersAndImages(spec corev1.PodSpec) (string, string) {
	var names, images []string
	for _, c := range spec.Containers {
		names, images = append(names, c.Name), append(images, c.Image)
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

func selectorString(s *metav1.LabelSelector) string {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil || s == nil {
		return "<none>"
	}
	return sel.String()
}

// The API server's columns (pkg/printers/internalversion: printDeployment,
// printReplicaSet, printStatefulSet, printDaemonSet, printJob, printCronJob).
var deploymentTable = tableFunc{
	columns: cols("Name", "Ready", "Up-to-date", "Available", "Age", "+Containers", "+Images", "+Selector"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		d := o.(*appsv1.Deployment)
		c, i := containersAndImages(d.Spec.Template.Spec)
		return []any{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas),
			int64(d.Status.AvailableReplicas), age(d.CreationTimestamp, now), c, i, selectorString(d.Spec.Selector)}, nil
	},
}

var replicaSetTable = tableFunc{
	columns: cols("Name", "Desired", "Current", "Ready", "Age", "+Containers", "+Images", "+Selector"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		r := o.(*appsv1.ReplicaSet)
		c, i := containersAndImages(r.Spec.Template.Spec)
		return []any{r.Name, int64(replicas(r.Spec.Replicas)), int64(r.Status.Replicas), int64(r.Status.ReadyReplicas),
			age(r.CreationTimestamp, now), c, i, selectorString(r.Spec.Selector)}, nil
	},
}

var statefulSetTable = tableFunc{
	columns: cols("Name", "Ready", "Age", "+Containers", "+Images"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		s := o.(*appsv1.StatefulSet)
		c, i := containersAndImages(s.Spec.Template.Spec)
		return []any{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)), age(s.CreationTimestamp, now), c, i}, nil
	},
}

var daemonSetTable = tableFunc{
	columns: cols("Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "+Containers", "+Images", "+Selector"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		d := o.(*appsv1.DaemonSet)
		c, i := containersAndImages(d.Spec.Template.Spec)
		ns := "<none>"
		if len(d.Spec.Template.Spec.NodeSelector) > 0 {
			ns = labels.Set(d.Spec.Template.Spec.NodeSelector).String()
		}
		return []any{d.Name, int64(d.Status.DesiredNumberScheduled), int64(d.Status.CurrentNumberScheduled), int64(d.Status.NumberReady),
			int64(d.Status.UpdatedNumberScheduled), int64(d.Status.NumberAvailable), ns, age(d.CreationTimestamp, now), c, i, selectorString(d.Spec.Selector)}, nil
	},
}

var jobTable = tableFunc{
	columns: cols("Name", "Status", "Completions", "Duration", "Age", "+Containers", "+Images", "+Selector"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		j := o.(*batchv1.Job)
		c, i := containersAndImages(j.Spec.Template.Spec)
		status := "Running"
		var conds []metav1.TableRowCondition
		for _, cond := range j.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case batchv1.JobComplete:
				status = "Complete"
				conds = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue}}
			case batchv1.JobFailed:
				status = "Failed"
				conds = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue}}
			}
		}
		dur := ""
		if s := j.Status.StartTime; s != nil {
			end := now
			if e := j.Status.CompletionTime; e != nil {
				end = e.Time
			}
			dur = duration.HumanDuration(end.Sub(s.Time))
		}
		sel := "<none>"
		if len(j.Spec.Template.Labels) > 0 {
			sel = labels.Set{batchv1.ControllerUidLabel: j.Spec.Template.Labels[batchv1.ControllerUidLabel]}.String()
		}
		return []any{j.Name, status, fmt.Sprintf("%d/%d", j.Status.Succeeded, replicas(j.Spec.Completions)), dur,
			age(j.CreationTimestamp, now), c, i, sel}, conds
	},
}

var cronJobTable = tableFunc{
	columns: cols("Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "+Containers", "+Images", "+Selector"),
	cells: func(o runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		cj := o.(*batchv1.CronJob)
		c, i := containersAndImages(cj.Spec.JobTemplate.Spec.Template.Spec)
		tz, suspend, last := "<none>", "<unset>", "<none>"
		if cj.Spec.TimeZone != nil {
			tz = *cj.Spec.TimeZone
		}
		if s := cj.Spec.Suspend; s != nil && *s { // printBoolPtr
			suspend = "True"
		} else if s != nil {
			suspend = "False"
		}
		if t := cj.Status.LastScheduleTime; t != nil {
			last = age(*t, now)
		}
		return []any{cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, age(cj.CreationTimestamp, now),
			c, i, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector)}, nil
	},
}
