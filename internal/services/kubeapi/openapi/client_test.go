package openapi

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
)

// client-go reads the documents as kubectl does: the v3 index, then each
// group-version's document at its hashed URL (kubectl apply, explain), and
// v2 as protobuf (the fallback of older clients' OpenAPISchema).
func TestClientGo(t *testing.T) {
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests = append(requests, r.URL.RequestURI()+" gzip="+r.Header.Get("Accept-Encoding"))
		Handler().ServeHTTP(w, r)
	}))
	defer srv.Close()
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}

	root := openapi3.NewRoot(dc.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	for _, gv := range []schema.GroupVersion{corev1.SchemeGroupVersion, eventsv1.SchemeGroupVersion,
		{Group: "authorization.k8s.io", Version: "v1"}, {Group: "metrics.k8s.io", Version: "v1beta1"}} {
		if !slices.Contains(gvs, gv) {
			t.Errorf("v3 index: no %s in %v", gv, gvs)
		}
	}
	spec, err := root.GVSpec(corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	pod := spec.Components.Schemas["io.k8s.api.core.v1.Pod"]
	if _, ok := pod.Properties["spec"]; pod == nil || !ok {
		t.Errorf("api/v1: no Pod with a spec in %d schemas", len(spec.Components.Schemas))
	}
	patch := spec.Paths.Paths["/api/v1/namespaces/{namespace}/pods/{name}"].Patch
	if patch == nil || !slices.ContainsFunc(patch.Parameters, func(p *spec3.Parameter) bool { return p.Name == "fieldValidation" }) {
		t.Error("api/v1: PATCH of a pod does not list fieldValidation (kubectl would validate client-side)")
	}

	v2, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	if v2.GetInfo().GetTitle() != "Kubernetes" || len(v2.GetPaths().GetPath()) == 0 || len(v2.GetDefinitions().GetAdditionalProperties()) == 0 {
		t.Errorf("v2 (protobuf): info %v, %d paths, %d definitions", v2.GetInfo(), len(v2.GetPaths().GetPath()), len(v2.GetDefinitions().GetAdditionalProperties()))
	}
	t.Logf("requests: %q", requests)
}
