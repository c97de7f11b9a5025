package manifestdir

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
)

// The Service kinds of the manifest dir.
const (
	Service        Kind = "service"
	ServiceAccount Kind = "serviceaccount"
)

// Service and ServiceAccount objects are written and compared as ConfigMaps
// are: by their document, labels, annotations and (Services) spec.
func serviceObject(svc *corev1.Service) Object {
	return Object{Ref: Ref{Service, svc.Namespace, svc.Name}, Service: svc,
		hash: metaHash(svc.ObjectMeta) + specHash(svc.Spec)}
}

func serviceAccountObject(sa *corev1.ServiceAccount) Object {
	return Object{Ref: Ref{ServiceAccount, sa.Namespace, sa.Name}, ServiceAccount: sa, hash: metaHash(sa.ObjectMeta)}
}

// ignoredObject is an object of a kind without effect, compared by its
// labels, annotations and content.
func ignoredObject(ig *manifest.Ignored) Object {
	return Object{Ref: Ref{Kind(strings.ToLower(ig.Kind)), ig.ObjectMeta.Namespace, ig.ObjectMeta.Name}, Ignored: ig,
		hash: metaHash(ig.ObjectMeta) + ig.Hash}
}

// serviceObjects are the Service kinds' objects of a decoded file.
func serviceObjects(svcs []*corev1.Service, sas []*corev1.ServiceAccount) []Object {
	var out []Object
	for _, svc := range svcs {
		out = append(out, serviceObject(svc))
	}
	for _, sa := range sas {
		out = append(out, serviceAccountObject(sa))
	}
	return out
}

// indexServices adds the snapshot's Service kinds to an index.
func indexServices(snap source.Snapshot, add func(Object, map[string]string)) {
	for _, svc := range snap.Services {
		add(serviceObject(svc), svc.Annotations)
	}
	for _, sa := range snap.ServiceAccounts {
		add(serviceAccountObject(sa), sa.Annotations)
	}
}

// specHash is a Service spec as JSON (plain data: cannot fail).
func specHash(spec corev1.ServiceSpec) string {
	b, _ := json.Marshal(spec)
	return string(b)
}
