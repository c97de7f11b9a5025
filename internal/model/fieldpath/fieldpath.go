// Package fieldpath reads the downward API's metadata fields of an object,
// as the kubelet's pkg/fieldpath does (ExtractFieldPathAsString, FormatMap):
// what a downwardAPI volume file holds, and what kubectl describe shows for
// an env var taken from a fieldRef. Pure.
package fieldpath

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExtractFieldPathAsString is the value of a metadata field path of obj:
// metadata.name, metadata.namespace, metadata.uid, metadata.labels and
// metadata.annotations (FormatMap), and one label or annotation
// (metadata.labels['key']). Other paths are an error: the kubelet resolves
// spec and status paths from the pod it runs.
func ExtractFieldPathAsString(obj metav1.Object, path string) (string, error) {
	if m, key, ok := subscript(obj, path); ok {
		return m[key], nil
	}
	switch path {
	case "metadata.name":
		return obj.GetName(), nil
	case "metadata.namespace":
		return obj.GetNamespace(), nil
	case "metadata.uid":
		return string(obj.GetUID()), nil
	case "metadata.labels":
		return FormatMap(obj.GetLabels()), nil
	case "metadata.annotations":
		return FormatMap(obj.GetAnnotations()), nil
	}
	return "", fmt.Errorf("fieldRef %q is not supported", path)
}

// subscript splits metadata.labels['key'] and metadata.annotations['key'].
func subscript(obj metav1.Object, path string) (map[string]string, string, bool) {
	for prefix, m := range map[string]func() map[string]string{"metadata.labels": obj.GetLabels, "metadata.annotations": obj.GetAnnotations} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(rest, "']") {
			return m(), strings.TrimSuffix(rest, "']"), true
		}
	}
	return nil, "", false
}

// FormatMap is the kubelet's: sorted key="value" lines.
func FormatMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%v=%q\n", k, m[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}
