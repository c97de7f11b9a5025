package configdata

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// ScopeFunc maps a config source (the podhost.io/config-source annotation
// of a pod or an object: a manifest file, a URL) to its trust scope. A pod
// reads only the ConfigMaps and Secrets whose source has the pod's scope:
// an object another source declares is missing for it, as an object the
// API server does not have is for the kubelet (docs/decisions.md 36).
type ScopeFunc func(source string) string

// scopeOf is the scope of the source recorded in annotations ("" without a
// ScopeFunc).
func (s *Store) scopeOf(annotations map[string]string) string {
	if s.scope == nil {
		return ""
	}
	return s.scope(annotations[wellknown.AnnotationConfigSource])
}

// For is the Lookup of pod: the objects of its scope only.
func (s *Store) For(pod *corev1.Pod) Lookup {
	return scoped{s: s, scope: s.scopeOf(pod.Annotations)}
}

// scoped is one scope's view of a Store.
type scoped struct {
	s     *Store
	scope string
}

func (v scoped) ConfigMap(namespace, name string) (*corev1.ConfigMap, bool) {
	return find(v, func(s *Store) map[string]*corev1.ConfigMap { return s.cms }, namespace+"/"+name)
}

func (v scoped) Secret(namespace, name string) (*corev1.Secret, bool) {
	return find(v, func(s *Store) map[string]*corev1.Secret { return s.secrets }, namespace+"/"+name)
}

// find is the object key of the map of's (read under the lock: Replace
// swaps the maps) if its source is of v's scope.
func find[T interface{ GetAnnotations() map[string]string }](v scoped, of func(*Store) map[string]T, key string) (T, bool) {
	v.s.mu.RLock()
	defer v.s.mu.RUnlock()
	o, ok := of(v.s)[key]
	if !ok || v.s.scopeOf(o.GetAnnotations()) != v.scope {
		var none T
		return none, false
	}
	return o, true
}
