package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/services/api"
)

// workloadResources maps kubectl's words for the workload kinds to the
// resource get prints.
var workloadResources = map[string]string{
	"deployments": "deployments", "deployment": "deployments", "deploy": "deployments",
	"replicasets": "replicasets", "replicaset": "replicasets", "rs": "replicasets",
	"statefulsets": "statefulsets", "statefulset": "statefulsets", "sts": "statefulsets",
	"daemonsets": "daemonsets", "daemonset": "daemonsets", "ds": "daemonsets",
	"jobs": "jobs", "job": "jobs",
	"cronjobs": "cronjobs", "cronjob": "cronjobs", "cj": "cronjobs",
}

// workloadResource is the resource of a workload word ("deploy",
// "deployments.apps"), "" for another word.
func workloadResource(word string) string {
	w, _, _ := strings.Cut(strings.ToLower(word), ".")
	return workloadResources[w]
}

// IsWorkloadResource reports whether get's resource is a workload kind.
func IsWorkloadResource(resource string) bool {
	return workloadResources[resource] == resource && resource != ""
}

// workloadRow is one workload as get prints it.
type workloadRow struct {
	meta  metav1.ObjectMeta
	obj   any      // the typed object (json, yaml)
	cells []string // the columns after NAME, before AGE
}

// workloadHeaders are kubectl's columns between NAME and AGE.
var workloadHeaders = map[string][]string{
	"deployments":  {"READY", "UP-TO-DATE", "AVAILABLE"},
	"replicasets":  {"DESIRED", "CURRENT", "READY"},
	"statefulsets": {"READY"},
	"daemonsets":   {"DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR"},
	"jobs":         {"STATUS", "COMPLETIONS", "DURATION"},
	"cronjobs":     {"SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE"},
}

// GetWorkloads prints the daemon's workloads of one kind (resource) with
// kubectl get's columns, or as JSON, YAML or names.
func GetWorkloads(ctx context.Context, o GetOptions, resource string, s cmdutil.IOStreams) error {
	switch o.Output {
	case "", "wide", "json", "yaml", "name":
	default:
		return fmt.Errorf("output format %q is not supported for %s by podhost (wide, json, yaml, name)", o.Output, resource)
	}
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return fmt.Errorf("unable to parse the label selector %q: %w", o.Selector, err)
	}
	l, err := cmdutil.NewClient(o.Socket, s).ListWorkloads(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	var rows []workloadRow
	for _, r := range workloadRows(l, resource, now) {
		if (o.Namespace == "" || r.meta.Namespace == o.Namespace) && sel.Matches(labels.Set(r.meta.Labels)) {
			rows = append(rows, r)
		}
	}
	rows, missing := cmdutil.ByName(rows, o.Names, func(r *workloadRow) string { return r.meta.Name }, resource)
	return errors.Join(append([]error{printWorkloads(rows, resource, o, now, s)}, missing...)...)
}

func printWorkloads(rows []workloadRow, resource string, o GetOptions, now time.Time, s cmdutil.IOStreams) error {
	kind := strings.TrimSuffix(resource, "s")
	switch o.Output {
	case "json", "yaml":
		if len(rows) == 1 && len(o.Names) == 1 {
			return printers.Object(s.Out, rows[0].obj, o.Output)
		}
		items := make([]any, 0, len(rows))
		for _, r := range rows {
			items = append(items, r.obj)
		}
		return printers.Object(s.Out, map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, o.Output)
	case "name":
		group := ".apps"
		if resource == "jobs" || resource == "cronjobs" {
			group = ".batch"
		}
		for _, r := range rows {
			fmt.Fprintf(s.Out, "%s%s/%s\n", kind, group, r.meta.Name)
		}
		return nil
	}
	if len(rows) == 0 && len(o.Names) == 0 {
		where := " in " + o.Namespace + " namespace"
		if o.Namespace == "" {
			where = ""
		}
		fmt.Fprintf(s.ErrOut, "No resources found%s.\n", where)
		return nil
	}
	header := append(append([]string{"NAME"}, workloadHeaders[resource]...), "AGE")
	if o.Namespace == "" {
		header = append([]string{"NAMESPACE"}, header...)
	}
	var table [][]string
	for _, r := range rows {
		row := append(append([]string{r.meta.Name}, r.cells...), age(r.meta.CreationTimestamp, now))
		if o.Namespace == "" {
			row = append([]string{r.meta.Namespace}, row...)
		}
		table = append(table, printers.EscapeCells(row))
	}
	return printers.Table(s.Out, header, table, o.NoHeaders)
}

// workloadRows are the workloads of resource in l, by namespace and name.
func workloadRows(l *api.WorkloadList, resource string, now time.Time) []workloadRow {
	var rows []workloadRow
	switch resource {
	case "deployments":
		for _, d := range l.Deployments {
			rows = append(rows, workloadRow{d.ObjectMeta, d, []string{ratio(d.Status.ReadyReplicas, replicas(d.Spec.Replicas)),
				fmt.Sprint(d.Status.UpdatedReplicas), fmt.Sprint(d.Status.AvailableReplicas)}})
		}
	case "replicasets":
		for _, r := range l.ReplicaSets {
			rows = append(rows, workloadRow{r.ObjectMeta, r, []string{fmt.Sprint(replicas(r.Spec.Replicas)), fmt.Sprint(r.Status.Replicas), fmt.Sprint(r.Status.ReadyReplicas)}})
		}
	case "statefulsets":
		for _, st := range l.StatefulSets {
			rows = append(rows, workloadRow{st.ObjectMeta, st, []string{ratio(st.Status.ReadyReplicas, replicas(st.Spec.Replicas))}})
		}
	case "daemonsets":
		for _, d := range l.DaemonSets {
			rows = append(rows, workloadRow{d.ObjectMeta, d, []string{fmt.Sprint(d.Status.DesiredNumberScheduled), fmt.Sprint(d.Status.CurrentNumberScheduled),
				fmt.Sprint(d.Status.NumberReady), fmt.Sprint(d.Status.UpdatedNumberScheduled), fmt.Sprint(d.Status.NumberAvailable), nodeSelector(d.Spec.Template.Spec)}})
		}
	case "jobs":
		for _, j := range l.Jobs {
			rows = append(rows, workloadRow{j.ObjectMeta, j, []string{jobStatus(j.Status), ratio(j.Status.Succeeded, replicas(j.Spec.Completions)), jobDuration(j.Status, now)}})
		}
	case "cronjobs":
		for _, cj := range l.CronJobs {
			rows = append(rows, workloadRow{cj.ObjectMeta, cj, cronJobCells(cj, now)})
		}
	}
	slices.SortFunc(rows, func(a, b workloadRow) int {
		return strings.Compare(a.meta.Namespace+"/"+a.meta.Name, b.meta.Namespace+"/"+b.meta.Name)
	})
	return rows
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

func ratio(a, b int32) string { return fmt.Sprintf("%d/%d", a, b) }

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// nodeSelector is kubectl's NODE SELECTOR cell: k=v,... or <none>.
func nodeSelector(spec corev1.PodSpec) string {
	if len(spec.NodeSelector) == 0 {
		return "<none>"
	}
	return labels.Set(spec.NodeSelector).String()
}

// jobStatus is kubectl's STATUS of a Job: Complete, Failed, or Running.
func jobStatus(s batchv1.JobStatus) string {
	for _, c := range s.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return "Complete"
		case batchv1.JobFailed:
			return "Failed"
		}
	}
	return "Running"
}

// jobDuration is kubectl's DURATION: start to completion (or to now).
func jobDuration(s batchv1.JobStatus, now time.Time) string {
	if s.StartTime == nil {
		return ""
	}
	end := now
	if s.CompletionTime != nil {
		end = s.CompletionTime.Time
	}
	return duration.HumanDuration(end.Sub(s.StartTime.Time))
}

// cronJobCells are kubectl's SCHEDULE, TIMEZONE, SUSPEND, ACTIVE and LAST
// SCHEDULE of a CronJob (printCronJob).
func cronJobCells(cj batchv1.CronJob, now time.Time) []string {
	tz, suspend, last := "<none>", "<unset>", "<none>"
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	if s := cj.Spec.Suspend; s != nil && *s {
		suspend = "True"
	} else if s != nil {
		suspend = "False"
	}
	if t := cj.Status.LastScheduleTime; t != nil {
		last = age(*t, now)
	}
	return []string{cj.Spec.Schedule, tz, suspend, fmt.Sprint(len(cj.Status.Active)), last}
}
