package manifest

import (
	"bytes"
	"encoding/json"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// serverMetadata are the metadata fields an API server (and `podhost get`)
// sets; a manifest does not carry them.
var serverMetadata = []string{"creationTimestamp", "resourceVersion", "generation", "selfLink", "managedFields"}

// PodhostAnnotations are the annotations podhost sets on the pods it shows
// (the decoder sets the first three again; the API adds warnings and a
// rollback's): never part of a manifest.
var PodhostAnnotations = []string{wellknown.AnnotationConfigHash, wellknown.AnnotationIdentityHash, wellknown.AnnotationConfigSource,
	wellknown.AnnotationWarnings, wellknown.AnnotationRolledBackFrom, wellknown.AnnotationRolledBackReason}

// CleanExported returns a Pod document without what `podhost get -o
// yaml|json` adds to it: status, the fields an API server sets, podhost's
// own annotations and spec.nodeName (which podhost sets from the host), so
// `apply -f` of get's output writes a manifest, not a snapshot of a
// running pod. metadata.uid stays: with it the pod keeps its identity, as
// an edit of a static pod with an explicit UID does on the kubelet (the
// manifest dir's Apply drops it again when the edit replaces the pod and
// the file names no uid: manifestdir's unpinExported). Any
// other document, or one with none of these, is returned unchanged.
func CleanExported(doc []byte) []byte {
	if !bytes.Contains(doc, []byte("status")) && !bytes.Contains(doc, []byte("podhost.io/")) && !bytes.Contains(doc, []byte("nodeName")) {
		return doc
	}
	v, e := parseDoc(doc, 1, nil)
	obj, ok := v.(map[string]any)
	if len(e) > 0 || !ok || obj["kind"] != "Pod" {
		return doc
	}
	changed := deleteKeys(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok {
		changed = deleteKeys(meta, serverMetadata...) || changed
		if ann, ok := meta["annotations"].(map[string]any); ok {
			changed = deleteKeys(ann, PodhostAnnotations...) || changed
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		changed = deleteKeys(spec, "nodeName") || changed
	}
	if !changed {
		return doc
	}
	return remarshal(doc, obj)
}

// deleteKeys deletes keys from m; true if one was there.
func deleteKeys(m map[string]any, keys ...string) bool {
	found := false
	for _, k := range keys {
		if _, ok := m[k]; ok {
			delete(m, k)
			found = true
		}
	}
	return found
}

// WithoutUID returns a Pod document without metadata.uid (YAML stays YAML,
// JSON JSON), or doc unchanged when it has none or is no Pod document.
func WithoutUID(doc []byte) []byte {
	if !bytes.Contains(doc, []byte("uid")) {
		return doc
	}
	v, e := parseDoc(doc, 1, nil)
	obj, ok := v.(map[string]any)
	if len(e) > 0 || !ok || obj["kind"] != "Pod" {
		return doc
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok || !deleteKeys(meta, "uid") {
		return doc
	}
	return remarshal(doc, obj)
}

// remarshal encodes obj as doc was: indented JSON or YAML; doc on failure.
func remarshal(doc []byte, obj map[string]any) []byte {
	var out []byte
	var err error
	if strings.HasPrefix(strings.TrimSpace(string(doc)), "{") {
		out, err = json.MarshalIndent(obj, "", "  ")
		out = append(out, '\n')
	} else {
		out, err = yaml.Marshal(obj)
	}
	if err != nil {
		return doc
	}
	return out
}
