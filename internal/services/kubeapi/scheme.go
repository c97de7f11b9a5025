package kubeapi

import (
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The scheme holds exactly the types the server reads and writes. There is
// no internal version: the v1 Go types are the storage types, as podhost's
// manifest dir holds v1 documents.
var (
	scheme = runtime.NewScheme()
	// strictCodecs decode with fieldValidation=Strict semantics (unknown
	// and duplicate fields are errors); laxCodecs drop them (Ignore).
	strictCodecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	laxCodecs    = serializer.NewCodecFactory(scheme)
	// paramCodec decodes query parameters into option structs
	// (metav1.ListOptions, corev1.PodLogOptions, ...).
	paramCodec = runtime.NewParameterCodec(scheme)
	// unversioned is the group-version of Status, the discovery documents
	// and the watch envelope, as the API server registers them.
	unversioned = schema.GroupVersion{Version: "v1"}
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, eventsv1.AddToScheme, authorizationv1.AddToScheme,
		metricsv1beta1.AddToScheme, apidiscoveryv2.AddToScheme, metav1.AddMetaToScheme, policyv1.AddToScheme,
		appsv1.AddToScheme, batchv1.AddToScheme, // workloads.go
	} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(scheme, unversioned)
	scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{},
		&metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	scheme.AddKnownTypes(metav1.SchemeGroupVersion, &metav1.Table{}, &metav1.PartialObjectMetadata{},
		&metav1.PartialObjectMetadataList{})
}
