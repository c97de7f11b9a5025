package manifestdir

import (
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Kind is the kind of an object of the manifest dir, as the CLI prints it.
type Kind string

// The kinds a manifest dir holds.
const (
	Pod       Kind = "pod"
	ConfigMap Kind = "configmap"
	Secret    Kind = "secret"
	// Workload kinds (workload.go): Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob.
	Deployment  Kind = "deployment"
	ReplicaSet  Kind = "replicaset"
	StatefulSet Kind = "statefulset"
	DaemonSet   Kind = "daemonset"
	Job         Kind = "job"
	CronJob     Kind = "cronjob"
)

// Ref names an object of the manifest dir.
type Ref struct {
	Kind            Kind
	Namespace, Name string
}

// key identifies the object in a dir: pods "ns/name" (manifest.FullName),
// others "kind:ns/name".
func (r Ref) key() string {
	if r.Kind == Pod {
		return r.Namespace + "/" + r.Name
	}
	return string(r.Kind) + ":" + r.Namespace + "/" + r.Name
}

// Object is one document of the manifest dir's kinds with what it decodes
// to. Build it with Decode: the two always agree.
type Object struct {
	Ref
	// Doc is the document as given (YAML or JSON): what Apply writes.
	Doc []byte
	// From names where the document came from, in errors (a file name,
	// shown by its base name, or "-", stdin) and in the decoded object's
	// podhost.io/config-source annotation; Result.File is where Apply
	// writes it.
	From string
	// The decoded object (defaulted, validated; a pod with its UID and
	// podhost's hash annotations): exactly one is set.
	Pod       *corev1.Pod
	ConfigMap *corev1.ConfigMap
	Secret    *corev1.Secret
	Workload  *manifest.Workload // its pods are the file's pods, not Objects of their own
	// Service kinds (service.go).
	Service        *corev1.Service
	ServiceAccount *corev1.ServiceAccount
	// Ignored: a kind without effect (RBAC, the metrics APIService; its
	// Kind is the lower-case kind, "clusterrole").
	Ignored *manifest.Ignored

	hash      string // content, for unchanged detection
	same      string // pods: what podhost runs (podAsRun); equal = unchanged too
	immutable bool
}

// Decode decodes one document (YAML or JSON) as the daemon's source does:
// the same validation, the same errors (a manifest.ErrorList naming from
// and the field). A document that declares no object, or several (a
// List), is an error; callers expand Lists first (manifest.ExpandLists)
// and may drop what `get -o yaml` adds (manifest.CleanExported).
func Decode(from string, doc []byte) (Object, error) {
	objs, err := manifest.DecodeObjects(from, doc)
	if err != nil {
		return Object{}, err
	}
	var out []Object
	for _, w := range objs.Workloads {
		out = append(out, workloadObject(w))
	}
	for _, p := range objs.Pods {
		if len(objs.Workloads) > 0 {
			break // a workload's pods
		}
		out = append(out, podObject(p))
	}
	for _, cm := range objs.ConfigMaps {
		out = append(out, configMapObject(cm))
	}
	for _, sec := range objs.Secrets {
		out = append(out, secretObject(sec))
	}
	out = append(out, serviceObjects(objs.Services, objs.ServiceAccounts)...)
	for _, ig := range objs.Ignored {
		out = append(out, ignoredObject(ig))
	}
	if len(out) != 1 {
		return Object{}, fmt.Errorf("%s: a document holds %d objects, want one", manifest.DisplayName(from), len(out))
	}
	out[0].Doc, out[0].From = doc, from
	return out[0], nil
}

func podObject(p *corev1.Pod) Object {
	return Object{Ref: Ref{Pod, p.Namespace, p.Name}, Pod: p, hash: manifest.Hash(p), same: podAsRun(p)}
}

func configMapObject(cm *corev1.ConfigMap) Object {
	return Object{Ref: Ref{ConfigMap, cm.Namespace, cm.Name}, ConfigMap: cm,
		hash: metaHash(cm.ObjectMeta) + configdata.DataHash(cm), immutable: cm.Immutable != nil && *cm.Immutable}
}

func secretObject(sec *corev1.Secret) Object {
	return Object{Ref: Ref{Secret, sec.Namespace, sec.Name}, Secret: sec,
		hash: metaHash(sec.ObjectMeta) + configdata.DataHash(sec), immutable: sec.Immutable != nil && *sec.Immutable}
}

// located is where an object currently lives in the manifest dir.
type located struct {
	obj  Object // no Doc: the snapshot's decoded object only
	file string
	// owner is the workload whose document declares this pod (nil: the
	// object's own document does).
	owner *Ref
}

// index maps object key → location for every object of a snapshot.
func index(snap source.Snapshot) map[string]located {
	idx := map[string]located{}
	add := func(o Object, ann map[string]string) {
		idx[o.key()] = located{obj: o, file: ann[wellknown.AnnotationConfigSource]}
	}
	for _, p := range snap.Pods {
		add(podObject(p), p.Annotations)
	}
	for _, cm := range snap.ConfigMaps {
		add(configMapObject(cm), cm.Annotations)
	}
	for _, sec := range snap.Secrets {
		add(secretObject(sec), sec.Annotations)
	}
	for _, w := range snap.Workloads {
		o := workloadObject(w)
		add(o, w.Meta().Annotations)
		indexWorkloadPods(idx, o)
	}
	indexServices(snap, add)
	for _, ig := range snap.Ignored {
		add(ignoredObject(ig), ig.ObjectMeta.Annotations)
	}
	return idx
}

// podAsRun is the pod as podhost runs it, defaulted, without what
// `get -o yaml` adds to a manifest (status, podhost's annotations, the
// node name): applying that output again changes nothing, as with
// kubectl, instead of rewriting every file (which restarts the pods).
func podAsRun(p *corev1.Pod) string {
	c := p.DeepCopy()
	c.Status = corev1.PodStatus{}
	c.Spec.NodeName = ""
	for _, a := range manifest.PodhostAnnotations {
		delete(c.Annotations, a)
	}
	if len(c.Annotations) == 0 {
		c.Annotations = nil
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// metaHash covers the labels and annotations of a ConfigMap or Secret
// (podhost's config-source annotation excluded).
func metaHash(m metav1.ObjectMeta) string {
	ann := maps.Clone(m.Annotations)
	delete(ann, wellknown.AnnotationConfigSource)
	b, _ := json.Marshal([]any{m.Labels, ann})
	return string(b)
}
