package manifest

// Pod identity (see docs/decisions.md, "a pod keeps its UID across edits of
// its labels, annotations and resources").
//
// The identity hash is the spec hash (same canonical form, see hash.go) of
// the document with the MutablePaths removed. A pod's UID is derived from
// it, so an edit of only those paths keeps the UID: the pod's worker gets
// the new version as an update and nothing restarts. The spec hash of the
// whole document stays the config hash ("which version runs", change
// detection). A document with none of the mutable paths has an identity
// hash equal to its spec hash, so its UID is the one older podhost versions
// derived from the spec hash (see the manager's adoption for the others).

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// MutablePaths are the document paths an edit may change while the pod
// keeps its UID (and its containers): "[*]" means every list element.
//
// THE SWITCH: this list decides which edits are applied in place. Changing
// it changes the identity hash (and so the UID) of every pod that sets one
// of the paths added or removed; the manager adopts such a running pod
// whose document did not change (docs/decisions.md), but keep edits to the
// list rare.
//
//   - metadata.labels, metadata.annotations: applied in place (downwardAPI
//     files rewritten; env vars of running containers keep their values,
//     as in the kubelet). podhost.io/ annotations included: after only
//     matters before a pod is admitted, the rest are podhost's own.
//     The per-container AppArmor annotation is not: identityOf keeps it
//     (recreatingAnnotations).
//   - metadata.managedFields (server-side apply's, kept in the document by
//     the kube API), status (dropped at decode: cleanServerFields).
//   - containers' and initContainers' resources: in-place resize (issue 12,
//     internal/kubelet/manager/resize.go, internal/kubelet/syncer/resize.go). A resources
//     edit that would change the QoS class keeps the pod too, and the resize
//     is refused (status.resize Infeasible), as Kubernetes refuses it.
//     Remove these two lines to make a resources edit a new pod again.
var MutablePaths = []string{
	"metadata.labels",
	"metadata.annotations",
	"metadata.managedFields",
	"status",
	"spec.containers[*].resources",
	"spec.initContainers[*].resources",
}

// IdentityHash returns the identity hash of one Pod document (YAML or
// JSON): its spec hash with the MutablePaths removed. It decodes and
// validates the pod: errors as Decode's.
func IdentityHash(doc []byte) (string, error) {
	pods, err := Decode("", doc)
	if err != nil {
		return "", err
	}
	if len(pods) != 1 {
		return "", fileError("", "%d pods given, one expected", len(pods))
	}
	return Identity(pods[0]), nil
}

// identityOf hashes generic document data without the mutable paths: a
// document with none of them has identity hash == spec hash.
func identityOf(v any) (string, error) {
	kept := recreatingAnnotations(v)
	for _, p := range MutablePaths {
		v = without(v, splitPath(p))
	}
	if len(kept) > 0 {
		v = withAnnotations(v, kept)
	}
	canon, err := canonicalJSON(v)
	if err != nil {
		return "", fileError("", "%s", err)
	}
	return hashCanonical(canon), nil
}

// recreatingAnnotations returns the document's annotations whose edit is
// a new pod although metadata.annotations is mutable: the per-container
// AppArmor annotation (spec/security.go) is read only when a container is
// created, so an edit applied in place would leave the running containers
// on the old profile (the kubelet makes any edit of a static pod a new
// pod).
func recreatingAnnotations(v any) map[string]any {
	doc, _ := v.(map[string]any)
	meta, _ := doc["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	var kept map[string]any
	for k, val := range ann {
		if strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			if kept == nil {
				kept = map[string]any{}
			}
			kept[k] = val
		}
	}
	return kept
}

// withAnnotations returns v (a document whose annotations were removed)
// with ann as its metadata.annotations, copying the maps on the way.
func withAnnotations(v any, ann map[string]any) any {
	doc, ok := v.(map[string]any)
	if !ok {
		return v
	}
	meta, _ := doc["metadata"].(map[string]any)
	out, outMeta := make(map[string]any, len(doc)), make(map[string]any, len(meta)+1)
	for k, x := range doc {
		out[k] = x
	}
	for k, x := range meta {
		outMeta[k] = x
	}
	outMeta["annotations"] = ann
	out["metadata"] = outMeta
	return out
}

// splitPath turns "spec.containers[*].resources" into
// ["spec", "containers", "*", "resources"].
func splitPath(p string) []string {
	return strings.Split(strings.ReplaceAll(p, "[*]", ".*"), ".")
}

// without returns v with the value at path removed. It copies the maps and
// lists along the path and shares the rest; v is not modified. A path that
// does not match (missing key, other type) leaves v as it is.
func without(v any, path []string) any {
	if len(path) == 0 {
		return v
	}
	switch t := v.(type) {
	case map[string]any:
		child, ok := t[path[0]]
		if !ok || path[0] == "*" {
			return v
		}
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = x
		}
		if len(path) == 1 {
			delete(out, path[0])
		} else {
			out[path[0]] = without(child, path[1:])
		}
		return out
	case []any:
		if path[0] != "*" {
			return v
		}
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = without(x, path[1:])
		}
		return out
	}
	return v
}

// Identity returns the pod's identity hash (its identity-hash annotation),
// "" if unset.
func Identity(pod *corev1.Pod) string {
	return pod.Annotations[wellknown.AnnotationIdentityHash]
}

// LegacyUID is the UID podhost versions before identity hashes derived for
// the pod: PodUID over its full spec hash (config hash). The manager adopts
// a running pod admitted under it.
func LegacyUID(pod *corev1.Pod) types.UID {
	return PodUID(pod.Namespace, pod.Name, Hash(pod))
}
