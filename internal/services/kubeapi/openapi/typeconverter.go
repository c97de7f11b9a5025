package openapi

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// TypeConverter is the schema server-side apply merges with
// (managedfields.NewDefaultFieldManager's first argument): the
// structured-merge-diff schema kube-apiserver computes at start from its
// OpenAPI definitions (managedfields.NewTypeConverter), generated with the
// documents, for the kinds clients may write (tools/kapigen/served.go:
// Pod, ConfigMap, Secret, Event of core/v1 and events.k8s.io/v1, and the
// types they reference; other kinds are an error). It is built on the
// first call (some 15 ms; 0.5 MB of heap stays) and shared.
//
// Objects are looked up by their apiVersion and kind, which must be set.
func TypeConverter() (managedfields.TypeConverter, error) { return typeConverter() }

var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	f, err := doc("smd-schema.yaml")
	if err != nil {
		return nil, err
	}
	y, err := f.bytes()
	if err != nil {
		return nil, fmt.Errorf("openapi: smd-schema.yaml: %w", err)
	}
	parser, err := typed.NewParser(typed.YAMLObject(y))
	if err != nil {
		return nil, fmt.Errorf("openapi: smd-schema.yaml: %w", err)
	}
	// The scheme maps a kind to its type's name in the schema
	// (io.k8s.api.core.v1.Pod, from the types' OpenAPIModelName).
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, eventsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("openapi: %w", err)
		}
	}
	return managedfields.NewSchemeTypeConverter(scheme, parser), nil
})
