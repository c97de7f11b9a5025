package manifest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// KindCronJob is batch/v1 CronJob: the CronJob controller
// (internal/desired/rolling, cron.go) makes a Job of its jobTemplate at
// each scheduled time, run by the Job support as a Job from a file.
const KindCronJob = "CronJob"

// The API server's defaults of a CronJob's history limits.
const (
	DefaultSuccessfulJobsHistoryLimit = 3
	DefaultFailedJobsHistoryLimit     = 1
)

// MaxJobsHistoryLimit bounds the finished Jobs a CronJob keeps (each
// keeps its pods' records): memory stays bounded on one node.
const MaxJobsHistoryLimit = 100

// maxCronJobNameLength is the API server's: the controller appends an
// 11-character "-<minutes>" to name a Job, whose name is a 63-character
// label.
const maxCronJobNameLength = 63 - 11

// validTimeZoneCharacters is the API server's (pkg/apis/batch/validation).
var validTimeZoneCharacters = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// decodeCronJob defaults and validates a CronJob; its Pods are the pods
// of a Job made from its jobTemplate (checked by the sources' pod
// security and name checks as any pod is; the controller never runs them:
// it runs the pods of the Jobs it makes).
func decodeCronJob(file string, w *Workload, obj map[string]any, budget *int64) (*Workload, errs) {
	var e errs
	cj := w.CronJob
	if cj.Namespace == "" {
		cj.Namespace = defaultNamespace
	}
	if cj.Spec.ConcurrencyPolicy == "" {
		cj.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if cj.Spec.Suspend == nil {
		cj.Spec.Suspend = ptr(false)
	}
	if cj.Spec.SuccessfulJobsHistoryLimit == nil {
		cj.Spec.SuccessfulJobsHistoryLimit = ptr(int32(DefaultSuccessfulJobsHistoryLimit))
	}
	if cj.Spec.FailedJobsHistoryLimit == nil {
		cj.Spec.FailedJobsHistoryLimit = ptr(int32(DefaultFailedJobsHistoryLimit))
	}
	all := validateMeta(&cj.ObjectMeta, field.NewPath("metadata"))
	all = append(all, validateCronJob(cj)...)
	if e.addField(all); len(e) > 0 {
		return nil, e
	}
	spec, _ := obj["spec"].(map[string]any)
	w.cronTmpl, _ = spec["jobTemplate"].(map[string]any)
	w.file = file
	setSource(&cj.ObjectMeta, file)
	probe, pe := decodeWorkload(file, KindJob, w.cronJobDoc(time.Unix(0, 0)), budget)
	if len(pe) > 0 {
		for _, fe := range pe {
			fe.Field = joinField("spec.jobTemplate", fe.Field)
		}
		return nil, pe
	}
	w.Pods = probe.Pods
	return w, nil
}

// validateCronJob checks a CronJob as the API server does on create
// (ValidateCronJobCreate; the jobTemplate is checked as a Job).
func validateCronJob(cj *batchv1.CronJob) field.ErrorList {
	var all field.ErrorList
	if len(cj.Name) > maxCronJobNameLength {
		all = append(all, field.Invalid(field.NewPath("metadata", "name"), cj.Name, "must be no more than 52 characters"))
	}
	p := field.NewPath("spec")
	s := cj.Spec
	if s.Schedule == "" {
		all = append(all, field.Required(p.Child("schedule"), ""))
	} else {
		if _, err := parseSchedule(s.Schedule); err != nil {
			all = append(all, field.Invalid(p.Child("schedule"), s.Schedule, err.Error()))
		}
		if strings.Contains(s.Schedule, "TZ") {
			all = append(all, field.Invalid(p.Child("schedule"), s.Schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
		}
	}
	if d := s.StartingDeadlineSeconds; d != nil && *d < 0 {
		all = append(all, field.Invalid(p.Child("startingDeadlineSeconds"), *d, "must be greater than or equal to 0"))
	}
	all = append(all, validateTimeZone(s.TimeZone, p.Child("timeZone"))...)
	switch s.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	default:
		all = append(all, field.NotSupported(p.Child("concurrencyPolicy"), s.ConcurrencyPolicy,
			[]string{string(batchv1.AllowConcurrent), string(batchv1.ForbidConcurrent), string(batchv1.ReplaceConcurrent)}))
	}
	for name, v := range map[string]int32{"successfulJobsHistoryLimit": *s.SuccessfulJobsHistoryLimit, "failedJobsHistoryLimit": *s.FailedJobsHistoryLimit} {
		if v < 0 || v > MaxJobsHistoryLimit {
			all = append(all, field.Invalid(p.Child(name), v, fmt.Sprintf("must be between 0 and %d on one node", MaxJobsHistoryLimit)))
		}
	}
	return all
}

// validateTimeZone is the API server's check of spec.timeZone.
func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, *tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneCharacters.MatchString(part) {
			return field.ErrorList{field.Invalid(p, *tz, "unknown time zone "+*tz)}
		}
	}
	if strings.EqualFold(*tz, "Local") {
		return field.ErrorList{field.Invalid(p, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")}
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		return field.ErrorList{field.Invalid(p, *tz, err.Error())}
	}
	return nil
}

// parseSchedule is cron.ParseStandard recovering from its panics, as the
// API server and the controller call it (pkg/util/parsers).
func parseSchedule(s string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	return cron.ParseStandard(s)
}

// CronSchedule is a CronJob's schedule in its time zone, as the
// controller parses it (formatSchedule: "TZ=<timeZone> <schedule>").
func CronSchedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	s := cj.Spec.Schedule
	if tz := cj.Spec.TimeZone; tz != nil && !strings.Contains(s, "TZ") {
		s = "TZ=" + *tz + " " + s
	}
	return parseSchedule(s)
}

// CronJobName is the name the controller gives the Job of a scheduled
// time: the CronJob's, then the minutes since the epoch (getJobName).
func CronJobName(cronJob string, scheduled time.Time) string {
	return cronJob + "-" + strconv.FormatInt(scheduled.Unix()/60, 10)
}

// CronJobRun is the Job a CronJob makes for scheduled, decoded as a Job
// document is (getJobFromTemplate2: the jobTemplate's labels and
// annotations, the scheduled-timestamp annotation, the owner reference).
func (w *Workload) CronJobRun(scheduled time.Time) (*Workload, error) {
	if w.CronJob == nil || w.cronTmpl == nil {
		return nil, fmt.Errorf("CronJobRun: %s %s/%s is not a decoded CronJob", w.Kind, w.Meta().Namespace, w.Meta().Name)
	}
	var budget int64
	job, e := decodeWorkload(w.file, KindJob, w.cronJobDoc(scheduled), &budget)
	if len(e) > 0 {
		return nil, finish(w.file, e)
	}
	return job, nil
}

// cronJobDoc is the Job document of a run.
func (w *Workload) cronJobDoc(scheduled time.Time) map[string]any {
	cj := w.CronJob
	tmeta, _ := w.cronTmpl["metadata"].(map[string]any)
	labels, annotations := map[string]any{}, map[string]any{}
	if l, ok := tmeta["labels"].(map[string]any); ok {
		for k, v := range l {
			labels[k] = v
		}
	}
	if a, ok := tmeta["annotations"].(map[string]any); ok {
		for k, v := range a {
			annotations[k] = v
		}
	}
	loc := time.UTC
	if cj.Spec.TimeZone != nil {
		if l, err := time.LoadLocation(*cj.Spec.TimeZone); err == nil {
			loc = l
		}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	uid := cj.UID
	if uid == "" {
		uid = ownerUID(cj.Namespace, KindCronJob, cj.Name)
	}
	return map[string]any{
		"apiVersion": "batch/v1", "kind": KindJob,
		"metadata": map[string]any{
			"name": CronJobName(cj.Name, scheduled), "namespace": cj.Namespace,
			"creationTimestamp": scheduled.UTC().Format(time.RFC3339),
			"labels":            labels, "annotations": annotations,
			"ownerReferences": []any{map[string]any{"apiVersion": "batch/v1", "kind": KindCronJob, "name": cj.Name,
				"uid": string(uid), "controller": true, "blockOwnerDeletion": true}},
		},
		"spec": w.cronTmpl["spec"],
	}
}
