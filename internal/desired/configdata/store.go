// Package configdata holds the ConfigMaps and Secrets declared in the
// manifest sources while podhost runs (in memory only: Secret values never go
// to disk from here), tells which of them a pod references, and resolves
// what a configMap or secret volume must contain.
//
// A pod reads only the objects of its own source's trust scope (Store.For,
// scope.go): another source's object of the name is missing for it.
//
// The manager replaces the store's content with every manifest snapshot
// and wakes the pods that reference an object that changed (Index); the
// syncer reads it when it builds a container's environment and when it
// writes a pod's configMap and secret volumes.
package configdata

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Kind is the kind of a referenced object.
type Kind string

// Kinds.
const (
	ConfigMap Kind = "ConfigMap"
	Secret    Kind = "Secret"
)

// Ref names a ConfigMap or Secret.
type Ref struct {
	Kind      Kind
	Namespace string
	Name      string
}

func (r Ref) String() string { return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name) }

// Store is the current set of ConfigMaps and Secrets. Objects returned are
// shared: treat them as read-only. A pod reads them only through For: the
// objects of its own trust scope (scope.go).
type Store struct {
	scope   ScopeFunc
	mu      sync.RWMutex
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
	hashes  map[Ref]string
	changed chan struct{} // closed by the next Replace that changes something
}

// NewStore returns an empty Store whose pods read the objects of their
// own scope (nil: every pod reads every object, one scope).
func NewStore(scope ScopeFunc) *Store {
	return &Store{scope: scope, cms: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}, hashes: map[Ref]string{},
		changed: make(chan struct{})}
}

// ConfigMaps returns every ConfigMap (shared, read-only), in no order.
func (s *Store) ConfigMaps() []*corev1.ConfigMap {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Collect(maps.Values(s.cms))
}

// Secrets returns every Secret (shared, read-only), in no order.
func (s *Store) Secrets() []*corev1.Secret {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Collect(maps.Values(s.secrets))
}

// Changed is closed at the next Replace that changes, adds or removes an
// object (its data, labels or annotations).
func (s *Store) Changed() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.changed
}

// Replace makes cms and secrets the whole content of the store and returns
// the objects that appeared, changed, went away or moved to another scope
// (another source took the name over: its pods may now read it).
func (s *Store) Replace(cms []*corev1.ConfigMap, secrets []*corev1.Secret) []Ref {
	nextCM := make(map[string]*corev1.ConfigMap, len(cms))
	nextSec := make(map[string]*corev1.Secret, len(secrets))
	hashes := map[Ref]string{}
	for _, cm := range cms {
		nextCM[cm.Namespace+"/"+cm.Name] = cm
		hashes[Ref{ConfigMap, cm.Namespace, cm.Name}] = s.scopeOf(cm.Annotations) + " " + DataHash(cm)
	}
	for _, sec := range secrets {
		nextSec[sec.Namespace+"/"+sec.Name] = sec
		hashes[Ref{Secret, sec.Namespace, sec.Name}] = s.scopeOf(sec.Annotations) + " " + DataHash(sec)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var changed []Ref
	for r, h := range hashes {
		if s.hashes[r] != h {
			changed = append(changed, r)
		}
	}
	for r := range s.hashes {
		if _, ok := hashes[r]; !ok {
			changed = append(changed, r)
		}
	}
	if len(changed) > 0 || metaChanged(s.cms, nextCM) || metaChanged(s.secrets, nextSec) {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.cms, s.secrets, s.hashes = nextCM, nextSec, hashes
	return changed
}

// DataHash is a digest of what a ConfigMap or Secret holds (data,
// binaryData, type, immutable), for change detection. It is never
// persisted or shown.
func DataHash(obj any) string {
	h := sha256.New()
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		writeSorted(h, o.Data, func(v string) []byte { return []byte(v) })
		writeSorted(h, o.BinaryData, func(v []byte) []byte { return v })
		fmt.Fprint(h, o.Immutable != nil && *o.Immutable)
	case *corev1.Secret:
		writeSorted(h, o.Data, func(v []byte) []byte { return v })
		fmt.Fprint(h, string(o.Type), o.Immutable != nil && *o.Immutable)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func writeSorted[V any](w interface{ Write([]byte) (int, error) }, m map[string]V, b func(V) []byte) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := b(m[k])
		hdr, _ := json.Marshal([]any{k, len(v)})
		_, _ = w.Write(hdr)
		_, _ = w.Write(v)
	}
	_, _ = w.Write([]byte{0})
}

// metaChanged: an object's labels or annotations differ (DataHash covers
// the data only: a pod does not care, a client of the API does).
func metaChanged[T interface {
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}](old, next map[string]T) bool {
	for k, n := range next {
		o, ok := old[k]
		if !ok || !maps.Equal(o.GetLabels(), n.GetLabels()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) {
			return true
		}
	}
	return false
}
