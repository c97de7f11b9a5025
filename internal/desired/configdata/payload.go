package configdata

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// DefaultMode is the mode of configMap and secret volume files when the
// volume sets none (Kubernetes' default, 0644).
const DefaultMode int32 = 0o644

// File is one file of a volume's payload.
type File struct {
	Data []byte
	Mode int32
}

// Lookup finds the ConfigMaps and Secrets one pod may read (Store.For).
type Lookup interface {
	ConfigMap(namespace, name string) (*corev1.ConfigMap, bool)
	Secret(namespace, name string) (*corev1.Secret, bool)
}

// ConfigMapPayload is what a configMap volume of a pod in namespace
// contains, as the kubelet's configmap volume MakePayload: every key (data
// and binaryData) at its own name, or only items (key → path, per-item
// mode), each with defaultMode unless the item sets one. A missing
// ConfigMap or key is an error unless the volume is optional (then the
// volume is empty, or the key is left out).
func ConfigMapPayload(l Lookup, namespace string, v *corev1.ConfigMapVolumeSource) (map[string]File, error) {
	optional := v.Optional != nil && *v.Optional
	cm, ok := l.ConfigMap(namespace, v.Name)
	if !ok {
		if optional {
			return map[string]File{}, nil
		}
		return nil, fmt.Errorf("configmap %q not found", v.Name)
	}
	get := func(k string) ([]byte, bool) {
		if s, ok := cm.Data[k]; ok {
			return []byte(s), true
		}
		b, ok := cm.BinaryData[k]
		return b, ok
	}
	keys := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k := range cm.Data {
		keys = append(keys, k)
	}
	for k := range cm.BinaryData {
		keys = append(keys, k)
	}
	p, err := payload(keys, get, v.Items, v.DefaultMode, optional)
	if err != nil {
		return nil, fmt.Errorf("configmap %q: %w", v.Name, err)
	}
	return p, nil
}

// SecretPayload is ConfigMapPayload for a secret volume.
func SecretPayload(l Lookup, namespace string, v *corev1.SecretVolumeSource) (map[string]File, error) {
	optional := v.Optional != nil && *v.Optional
	sec, ok := l.Secret(namespace, v.SecretName)
	if !ok {
		if optional {
			return map[string]File{}, nil
		}
		return nil, fmt.Errorf("secret %q not found", v.SecretName)
	}
	keys := make([]string, 0, len(sec.Data))
	for k := range sec.Data {
		keys = append(keys, k)
	}
	get := func(k string) ([]byte, bool) { b, ok := sec.Data[k]; return b, ok }
	p, err := payload(keys, get, v.Items, v.DefaultMode, optional)
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", v.SecretName, err)
	}
	return p, nil
}

func payload(keys []string, get func(string) ([]byte, bool), items []corev1.KeyToPath, defaultMode *int32, optional bool) (map[string]File, error) {
	mode := DefaultMode
	if defaultMode != nil {
		mode = *defaultMode
	}
	out := map[string]File{}
	if len(items) == 0 {
		for _, k := range keys {
			b, _ := get(k)
			out[k] = File{Data: b, Mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		b, ok := get(it.Key)
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("references non-existent key %s", it.Key)
		}
		f := File{Data: b, Mode: mode}
		if it.Mode != nil {
			f.Mode = *it.Mode
		}
		out[it.Path] = f
	}
	return out, nil
}
