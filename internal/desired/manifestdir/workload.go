package manifestdir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// workloadObject is the Object of a workload document: unchanged when the
// workload (podhost's annotations aside) and so its pods are the same.
func workloadObject(w *manifest.Workload) Object {
	m := w.Meta()
	return Object{Ref: Ref{Kind(strings.ToLower(w.Kind)), m.Namespace, m.Name}, Workload: w, hash: workloadHash(w)}
}

// workloadHash covers the decoded workload without its config-source
// annotation (where the document lives is no change).
func workloadHash(w *manifest.Workload) string {
	var typed any = w.Deployment
	switch {
	case w.ReplicaSet != nil:
		typed = w.ReplicaSet
	case w.StatefulSet != nil:
		typed = w.StatefulSet
	case w.DaemonSet != nil:
		typed = w.DaemonSet
	case w.Job != nil:
		typed = w.Job
	case w.CronJob != nil:
		typed = w.CronJob
	}
	b, _ := json.Marshal(typed)
	var obj map[string]any
	_ = json.Unmarshal(b, &obj)
	if meta, ok := obj["metadata"].(map[string]any); ok {
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, wellknown.AnnotationConfigSource)
		}
	}
	b, _ = json.Marshal(obj)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// pods are the pods an object declares: a pod, a workload's pods, or none.
func (o Object) pods() []*corev1.Pod {
	switch {
	case o.Pod != nil:
		return []*corev1.Pod{o.Pod}
	case o.Workload != nil:
		return o.Workload.Pods
	}
	return nil
}

// indexWorkloadPods marks the index entries of a workload's pods as owned
// by it: their document is the workload's, so a pod of that name cannot
// be applied or deleted on its own.
func indexWorkloadPods(idx map[string]located, w Object) {
	for _, p := range w.Workload.Pods {
		if loc, ok := idx[Ref{Pod, p.Namespace, p.Name}.key()]; ok {
			loc.owner = &w.Ref
			idx[Ref{Pod, p.Namespace, p.Name}.key()] = loc
		}
	}
}

// ownedErr refuses a write of ref when a workload declares it.
func (loc located) ownedErr(ref Ref) error {
	if loc.owner == nil {
		return nil
	}
	return fmt.Errorf("%s %s/%s belongs to %s %s (%s): edit, scale or delete the %s instead",
		ref.Kind, ref.Namespace, ref.Name, loc.owner.Kind, loc.owner.Name, filepath.Base(loc.file), loc.owner.Kind)
}

// checkOwned refuses applied objects that are pods of a workload of the
// dir (a Pod document of that name would be a second declaration).
func checkOwned(objs []Object, idx map[string]located) error {
	var errs []error
	for _, o := range objs {
		if loc, ok := idx[o.key()]; ok {
			if err := loc.ownedErr(o.Ref); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", manifest.DisplayName(o.From), err))
			}
		}
	}
	return errors.Join(errs...)
}
