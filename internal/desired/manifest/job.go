package manifest

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The labels the Job controller puts on its pods (k8s.io/api/batch/v1).
const (
	labelJobControllerUID       = batchv1.ControllerUidLabel // "batch.kubernetes.io/controller-uid"
	labelJobName                = batchv1.JobNameLabel       // "batch.kubernetes.io/job-name"
	labelLegacyJobControllerUID = "controller-uid"
	labelLegacyJobName          = "job-name"
)

// DefaultBackoffLimit is the API server's default spec.backoffLimit.
const DefaultBackoffLimit = 6

// decodeJob defaults and validates a Job and makes its first pods (as
// many as run at once: min(parallelism, completions)); the Job controller
// (internal/desired/rolling) asks JobPod for the next ones.
func decodeJob(file string, w *Workload, obj map[string]any, budget *int64) (*Workload, errs) {
	var e errs
	j := w.Job
	if j.Namespace == "" {
		j.Namespace = defaultNamespace
	}
	if j.Spec.Parallelism == nil {
		j.Spec.Parallelism = ptr(int32(1))
	}
	if j.Spec.Completions == nil && *j.Spec.Parallelism <= 1 {
		j.Spec.Completions = ptr(int32(1))
	}
	if j.Spec.BackoffLimit == nil {
		j.Spec.BackoffLimit = ptr(int32(DefaultBackoffLimit))
	}
	all := validateMeta(&j.ObjectMeta, field.NewPath("metadata"))
	all = append(all, validateJob(j)...)
	if e.addField(all); len(e) > 0 {
		return nil, e
	}
	spec, _ := obj["spec"].(map[string]any)
	w.tmpl, _ = spec["template"].(map[string]any)
	w.file = file
	pods, pe := expandPods(file, w, obj, budget)
	if len(pe) > 0 {
		return nil, pe
	}
	w.Pods = pods
	setSource(&j.ObjectMeta, file)
	return w, nil
}

// jobInitialPods is how many pods a Job starts with.
func jobInitialPods(j *batchv1.Job) int32 {
	if j.Spec.Completions == nil || j.Spec.Parallelism == nil {
		return 0 // refused by validateJob
	}
	return min(*j.Spec.Parallelism, *j.Spec.Completions)
}

// validateJob checks a Job as the API server does, and refuses what one
// node does not do (docs/fields.md, JobSpec).
func validateJob(j *batchv1.Job) field.ErrorList {
	var all field.ErrorList
	p := field.NewPath("spec")
	s := j.Spec
	for _, f := range []struct {
		name string
		v    *int32
		max  int32
	}{{"parallelism", s.Parallelism, MaxReplicas}, {"completions", s.Completions, MaxReplicas}, {"backoffLimit", s.BackoffLimit, MaxReplicas}} {
		if f.v != nil && (*f.v < 0 || *f.v > f.max) {
			all = append(all, field.Invalid(p.Child(f.name), *f.v, fmt.Sprintf("must be between 0 and %d on one node", f.max)))
		}
	}
	if s.Completions == nil {
		all = append(all, field.Required(p.Child("completions"), "a work-queue Job (parallelism without completions) is "+notSupported))
	}
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds <= 0 {
		all = append(all, field.Invalid(p.Child("activeDeadlineSeconds"), *s.ActiveDeadlineSeconds, "must be greater than 0"))
	}
	switch rp := s.Template.Spec.RestartPolicy; rp {
	case corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure:
	case "":
		all = append(all, field.Required(p.Child("template", "spec", "restartPolicy"), "a Job's pods need restartPolicy Never or OnFailure"))
	default:
		all = append(all, field.NotSupported(p.Child("template", "spec", "restartPolicy"), rp, []string{string(corev1.RestartPolicyOnFailure), string(corev1.RestartPolicyNever)}))
	}
	if s.Selector != nil {
		all = append(all, forbidden(p.Child("selector"), "a Job selector (podhost labels the Job's pods itself, as the API server generates it) is"))
	}
	if s.ManualSelector != nil && *s.ManualSelector {
		all = append(all, forbidden(p.Child("manualSelector"), "manualSelector (with a selector) is"))
	}
	if s.CompletionMode != nil && *s.CompletionMode != batchv1.NonIndexedCompletion {
		all = append(all, unsupported(p.Child("completionMode"), string(*s.CompletionMode), "supported: NonIndexed"))
	}
	refuse := func(set bool, name, what string) {
		if set {
			all = append(all, forbidden(p.Child(name), what+" is"))
		}
	}
	refuse(s.Suspend != nil && *s.Suspend, "suspend", "a suspended Job")
	refuse(s.PodFailurePolicy != nil, "podFailurePolicy", "a pod failure policy")
	refuse(s.SuccessPolicy != nil, "successPolicy", "a success policy")
	refuse(s.BackoffLimitPerIndex != nil, "backoffLimitPerIndex", "a backoff limit per index")
	refuse(s.MaxFailedIndexes != nil, "maxFailedIndexes", "maxFailedIndexes")
	if t := s.TTLSecondsAfterFinished; t != nil && *t < 0 { // the API server's ValidateNonnegativeField
		all = append(all, field.Invalid(p.Child("ttlSecondsAfterFinished"), *t, "must be greater than or equal to 0"))
	}
	return all
}

// jobPlan names a Job's pod i (its i-th attempt) and gives the Job
// controller's labels.
func (w *Workload) jobPlan(hash string, uid types.UID, i int) podPlan {
	j := w.Job
	return podPlan{name: jobPodName(j.Namespace+"/"+j.Name+"/"+hash, j.Name+"-", i), labels: map[string]string{
		labelJobControllerUID: string(uid), labelJobName: j.Name,
		labelLegacyJobControllerUID: string(uid), labelLegacyJobName: j.Name,
	}}
}

// jobPodName is the name of attempt i: base and a suffix derived from key
// and i, another one where an earlier attempt has it.
func jobPodName(key, base string, i int) string {
	used := map[string]bool{}
	var name string
	for k := 0; k <= i; k++ {
		name = generatedName(base, key+"/"+strconv.Itoa(k))
		for try := 1; used[name]; try++ {
			name = generatedName(base, key+"/"+strconv.Itoa(k)+"/"+strconv.Itoa(try))
		}
		used[name] = true
	}
	return name
}

// JobPod is a Job's pod i (attempts count from 0; Pods holds the first
// ones): named, labelled and decoded as the first.
func (w *Workload) JobPod(i int) (*corev1.Pod, error) {
	if w.Job == nil || w.tmpl == nil {
		return nil, fmt.Errorf("JobPod: %s %s/%s is not a decoded Job", w.Kind, w.Meta().Namespace, w.Meta().Name)
	}
	s := w.shape()
	hash := ComputeHash(s.template, nil)
	_, owner := w.plan()
	uid, _ := owner["uid"].(string)
	pod, e := decodePodObject(w.file, podDoc(w.tmpl, s.meta.Namespace, w.jobPlan(hash, types.UID(uid), i), owner))
	if len(e) > 0 {
		return nil, finish(w.file, e)
	}
	return pod, nil
}

// JobUID is the UID of a Job without metadata.uid (its pods' owner).
func JobUID(namespace, name string) types.UID {
	return ownerUID(namespace, KindJob, name)
}
