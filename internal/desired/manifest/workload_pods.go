package manifest

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// The labels the controllers put on their pods (k8s.io/api/apps/v1).
const (
	labelPodTemplateHash       = appsv1.DefaultDeploymentUniqueLabelKey // "pod-template-hash"
	labelControllerRevision    = appsv1.ControllerRevisionHashLabelKey  // "controller-revision-hash"
	labelStatefulSetPodName    = appsv1.StatefulSetPodNameLabel         // "statefulset.kubernetes.io/pod-name"
	labelPodIndex              = appsv1.PodIndexLabel                   // "apps.kubernetes.io/pod-index"
	labelPodTemplateGeneration = "pod-template-generation"              // the DaemonSet controller's (extensions/v1beta1 DaemonSetTemplateGenerationKey)
)

// maxGeneratedNameLength is the API server's (apiserver/pkg/storage/names):
// a generateName base is cut to 58 characters before its 5-character suffix.
const maxGeneratedNameLength = 63 - 5

// suffixAlphabet is k8s.io/apimachinery/pkg/util/rand's alphanums: no
// vowels (no words) and no confusable characters.
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// ComputeHash is the controllers' pod-template hash
// (k8s.io/kubernetes/pkg/controller.ComputeHash, copied: that package is
// not importable without the whole of k8s.io/kubernetes): FNV-32a over
// k8s.io/utils/dump.ForHash of the template (DeepHashObject), the
// collision count appended little-endian, the decimal sum encoded with
// rand.SafeEncodeString.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	hasher := fnv.New32a()
	fmt.Fprintf(hasher, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		hasher.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))
}

// generatedName is the API server's generateName (base cut to 58
// characters, then 5 characters of rand's alphabet), with the suffix
// derived from key instead of drawn at random: a manifest's pods keep
// their names across podhost restarts, as static pods must.
func generatedName(base, key string) string {
	if len(base) > maxGeneratedNameLength {
		base = base[:maxGeneratedNameLength]
	}
	sum := sha256.Sum256([]byte(key))
	b := make([]byte, 5)
	for i := range b {
		b[i] = suffixAlphabet[int(sum[i])%len(suffixAlphabet)]
	}
	return base + string(b)
}

// WorkloadRevision is the revision of the template a workload's pod was
// made from (its pod-template-hash or controller-revision-hash label), ""
// for other pods and a ReplicaSet's.
func WorkloadRevision(p *corev1.Pod) string {
	if h := p.Labels[labelPodTemplateHash]; h != "" {
		return h
	}
	return p.Labels[labelControllerRevision]
}

// ownerUID is the UID of a workload (or of a Deployment's ReplicaSet)
// without metadata.uid: derived as pod UIDs are, from its kind and name.
func ownerUID(namespace, kind, name string) types.UID {
	return PodUID(namespace, name, kind)
}

// podPlan is one pod of a workload before decoding.
type podPlan struct {
	name        string
	labels      map[string]string
	annotations map[string]string
	spec        map[string]any // fields the controller sets on the pod spec
}

// expandPods builds and decodes the pods of w; obj is its document.
func expandPods(file string, w *Workload, obj map[string]any, budget *int64) ([]*corev1.Pod, errs) {
	var e errs
	spec, _ := obj["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	if tmpl == nil {
		e.add("spec.template", "Required value")
		return nil, e
	}
	plans, owner := w.plan()
	if e = chargeExpansion(tmpl, w, len(plans), budget); len(e) > 0 {
		return nil, e
	}
	pods := make([]*corev1.Pod, 0, len(plans))
	for _, p := range plans {
		pod, pe := decodePodObject(file, podDoc(tmpl, w.Meta().Namespace, p, owner))
		if len(pe) > 0 {
			for _, fe := range pe {
				fe.Field = joinField("spec.template", fe.Field)
			}
			return nil, pe
		}
		pods = append(pods, pod)
	}
	return pods, nil
}

// plan names the pods of w and gives their labels, as its controller
// would, and their owner reference.
func (w *Workload) plan() ([]podPlan, map[string]any) {
	s := w.shape()
	ns, name := s.meta.Namespace, s.meta.Name
	hash := ComputeHash(s.template, nil)
	uid := s.meta.UID
	if uid == "" {
		uid = ownerUID(ns, w.Kind, name)
	}
	ownerKind, ownerName := w.Kind, name
	var plans []podPlan
	switch w.Kind {
	case KindStatefulSet:
		plans = w.statefulSetPlans(hash)
	case KindDeployment:
		ownerKind, ownerName = KindReplicaSet, name+"-"+hash
		uid = ownerUID(ns, ownerKind, ownerName)
		plans = randomPlans(ownerName+"-", ns+"/"+ownerName, int(*s.replicas), map[string]string{labelPodTemplateHash: hash})
	case KindReplicaSet:
		plans = randomPlans(name+"-", ns+"/"+name+"/"+hash, int(*s.replicas), nil)
	case KindJob:
		for i := range int(*s.replicas) {
			plans = append(plans, w.jobPlan(hash, uid, i))
		}
	default: // DaemonSet: one node, one pod
		plans = randomPlans(name+"-", ns+"/"+name+"/"+hash, 1,
			map[string]string{labelControllerRevision: hash, labelPodTemplateGeneration: "1"})
	}
	owner := map[string]any{"apiVersion": "apps/v1", "kind": ownerKind, "name": ownerName,
		"uid": string(uid), "controller": true, "blockOwnerDeletion": true}
	return plans, owner
}

// randomPlans names n pods base+suffix, the suffixes derived from key and
// the replica index, distinct.
func randomPlans(base, key string, n int, lbl map[string]string) []podPlan {
	plans := make([]podPlan, 0, n)
	used := map[string]bool{}
	for i := range n {
		name := generatedName(base, key+"/"+strconv.Itoa(i))
		for try := 1; used[name]; try++ {
			name = generatedName(base, key+"/"+strconv.Itoa(i)+"/"+strconv.Itoa(try))
		}
		used[name] = true
		plans = append(plans, podPlan{name: name, labels: lbl})
	}
	return plans
}

// statefulSetPlans names the pods NAME-ORDINAL with their identity labels,
// hostname and subdomain; OrderedReady makes each ordinal start after the
// previous one is Ready (podhost.io/after, which also stops them in
// reverse order).
func (w *Workload) statefulSetPlans(hash string) []podPlan {
	set := w.StatefulSet
	start := int32(0)
	if set.Spec.Ordinals != nil {
		start = set.Spec.Ordinals.Start
	}
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	var plans []podPlan
	for i := range *set.Spec.Replicas {
		ord := strconv.Itoa(int(start + i))
		p := podPlan{name: set.Name + "-" + ord,
			labels: map[string]string{labelControllerRevision: set.Name + "-" + hash, labelPodIndex: ord}}
		p.labels[labelStatefulSetPodName] = p.name
		p.spec = map[string]any{"hostname": p.name}
		if set.Spec.ServiceName != "" {
			p.spec["subdomain"] = set.Spec.ServiceName
		}
		if ordered && i > 0 {
			p.annotations = map[string]string{wellknown.AnnotationAfter: plans[i-1].name}
		}
		plans = append(plans, p)
	}
	return plans
}

// podDoc is the Pod document of one planned pod: the template's metadata
// and spec, with the controller's name, labels, owner and spec fields.
func podDoc(tmpl map[string]any, namespace string, p podPlan, owner map[string]any) map[string]any {
	meta := deepCopyMap(asMap(tmpl["metadata"]))
	meta["name"], meta["namespace"] = p.name, namespace
	meta["labels"] = mergeStrings(asMap(meta["labels"]), p.labels)
	ann := asMap(meta["annotations"])
	if after, ok := ann[wellknown.AnnotationAfter].(string); ok && after != "" && p.annotations[wellknown.AnnotationAfter] != "" {
		p.annotations = map[string]string{wellknown.AnnotationAfter: after + "," + p.annotations[wellknown.AnnotationAfter]}
	}
	if merged := mergeStrings(ann, p.annotations); len(merged) > 0 {
		meta["annotations"] = merged
	}
	meta["ownerReferences"] = []any{deepCopyMap(owner)}
	spec := deepCopyMap(asMap(tmpl["spec"]))
	for k, v := range p.spec {
		spec[k] = v
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func mergeStrings(m map[string]any, add map[string]string) map[string]any {
	out := deepCopyMap(m)
	for k, v := range add {
		out[k] = v
	}
	return out
}

// deepCopyMap copies a parsed document's maps and lists (the leaves are
// immutable values); nil gives an empty map.
func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopyValue(v)
	}
	return out
}

func deepCopyValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyMap(x)
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = deepCopyValue(y)
		}
		return out
	default:
		return v
	}
}

// MaxExpandedBytes bounds what the workloads of one file expand into: the
// bytes of each pod template times the pods made of it (for a Job, every
// attempt it may make), so that a 1 MiB file cannot become gigabytes of
// pods.
const MaxExpandedBytes = 16 << 20

// ExpandedBytes is what the workloads of o expanded into (the bytes
// MaxExpandedBytes bounds per file): a source decoding several files into
// one set (a manifest artifact) bounds their sum.
func (o *Objects) ExpandedBytes() int64 { return o.expanded }

// chargeExpansion counts w's pods against the file's budget.
func chargeExpansion(tmpl map[string]any, w *Workload, pods int, budget *int64) errs {
	var e errs
	canon, err := canonicalJSON(tmpl)
	if err != nil {
		e.add("spec.template", "%s", err)
		return e
	}
	if j := w.Job; j != nil {
		pods = int(*j.Spec.Completions + *j.Spec.BackoffLimit + *j.Spec.Parallelism)
	}
	*budget += int64(len(canon)) * int64(max(pods, 1))
	if *budget > MaxExpandedBytes {
		e.add("spec.template", "Invalid value: %d pods of a %d-byte template: the file's workloads would expand to more than %d bytes of pods", pods, len(canon), MaxExpandedBytes)
	}
	return e
}
