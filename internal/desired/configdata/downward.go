package configdata

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/fieldpath"
)

// ResourceFunc resolves a resourceFieldRef of a downwardAPI file (the
// kubelet's rules: limits fall back to the node's allocatable, divided by
// the divisor and rounded up).
type ResourceFunc func(ref *corev1.ResourceFieldSelector) (string, error)

// DownwardAPIPayload is what downwardAPI items of pod contain: metadata
// fields (labels and annotations as sorted key="value" lines, as the
// kubelet's fieldpath.FormatMap) and container resources.
func DownwardAPIPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32, res ResourceFunc) (map[string]File, error) {
	mode := DefaultMode
	if defaultMode != nil {
		mode = *defaultMode
	}
	out := make(map[string]File, len(items))
	for _, it := range items {
		var (
			v   string
			err error
		)
		switch {
		case it.FieldRef != nil:
			v, err = downwardField(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			v, err = res(it.ResourceFieldRef)
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI %s: %w", it.Path, err)
		}
		f := File{Data: []byte(v), Mode: mode}
		if it.Mode != nil {
			f.Mode = *it.Mode
		}
		out[it.Path] = f
	}
	return out, nil
}

func downwardField(pod *corev1.Pod, path string) (string, error) {
	return fieldpath.ExtractFieldPathAsString(pod, path)
}

// ProjectedPayload merges the sources of a projected volume: configMap
// and secret (as their volumes, with the projected defaultMode) and
// downwardAPI items.
func ProjectedPayload(l Lookup, pod *corev1.Pod, v *corev1.ProjectedVolumeSource, res ResourceFunc) (map[string]File, error) {
	out := map[string]File{}
	for i, src := range v.Sources {
		var (
			p   map[string]File
			err error
		)
		switch {
		case src.ConfigMap != nil:
			p, err = ConfigMapPayload(l, pod.Namespace, &corev1.ConfigMapVolumeSource{
				LocalObjectReference: src.ConfigMap.LocalObjectReference, Items: src.ConfigMap.Items,
				DefaultMode: v.DefaultMode, Optional: src.ConfigMap.Optional})
		case src.Secret != nil:
			p, err = SecretPayload(l, pod.Namespace, &corev1.SecretVolumeSource{
				SecretName: src.Secret.Name, Items: src.Secret.Items, DefaultMode: v.DefaultMode, Optional: src.Secret.Optional})
		case src.DownwardAPI != nil:
			p, err = DownwardAPIPayload(pod, src.DownwardAPI.Items, v.DefaultMode, res)
		default:
			err = fmt.Errorf("source type not supported by podhost")
		}
		if err != nil {
			return nil, fmt.Errorf("sources[%d]: %w", i, err)
		}
		maps.Copy(out, p)
	}
	return out, nil
}
