package main

import (
	"fmt"
	"slices"
	"strings"

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
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilopenapi "k8s.io/apiserver/pkg/util/openapi"
	restclient "k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/podhost/podhost/tools/kapigen/internal/openapi"
)

// newScheme holds the served groups' types (policy/v1 for the eviction
// body), and meta/v1's unversioned types as kube-apiserver's.
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, eventsv1.AddToScheme, authorizationv1.AddToScheme,
		metricsv1beta1.AddToScheme, policyv1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(s, unversioned)
	s.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{},
		&metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return s, nil
}

// newServer is a generic API server (never run: its handler is called in
// process) with the served resources installed on stubs, configured for
// OpenAPI as kube-apiserver (k8s.io/kubernetes pkg/controlplane/apiserver/
// config.go): title "Kubernetes", definitions from openapi-gen without the
// changes of disabled features.
func newServer(version string) (*genericapiserver.GenericAPIServer, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	// never dialed: the server is not run, its handler is called in process.
	cfg.ExternalAddress = "127.0.0.1:1"
	cfg.LoopbackClientConfig = &restclient.Config{Host: "https://" + cfg.ExternalAddress}
	defs := utilopenapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(openapi.GetOpenAPIDefinitions)
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(defs, namer)
	cfg.OpenAPIConfig.Info.Title = "Kubernetes"
	cfg.OpenAPIConfig.Info.Version = version
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(defs, namer)
	cfg.OpenAPIV3Config.Info.Title = "Kubernetes"
	cfg.OpenAPIV3Config.Info.Version = version

	srv, err := cfg.Complete(nil).New("kapigen", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("generic server: %w", err)
	}
	groups, err := apiGroups(scheme, codecs)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		if g.PrioritizedVersions[0].Group == "" {
			err = srv.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, g)
		} else {
			err = srv.InstallAPIGroup(g)
		}
		if err != nil {
			return nil, fmt.Errorf("install %s: %w", g.PrioritizedVersions[0], err)
		}
	}
	return srv, nil
}

// apiGroups: the served table as the generic server's group infos.
func apiGroups(scheme *runtime.Scheme, codecs serializer.CodecFactory) ([]*genericapiserver.APIGroupInfo, error) {
	var out []*genericapiserver.APIGroupInfo
	byGV := map[schema.GroupVersion]map[string]rest.Storage{}
	for i := range served {
		r := &served[i]
		st, err := storage(r, scheme)
		if err != nil {
			return nil, err
		}
		if byGV[r.gv] == nil {
			byGV[r.gv] = map[string]rest.Storage{}
			gi := genericapiserver.NewDefaultAPIGroupInfo(r.gv.Group, scheme, runtime.NewParameterCodec(scheme), codecs)
			gi.PrioritizedVersions = []schema.GroupVersion{r.gv}
			gi.VersionedResourcesStorageMap[r.gv.Version] = byGV[r.gv]
			out = append(out, &gi)
		}
		if _, dup := byGV[r.gv][r.name]; dup || strings.Count(r.name, "/") > 1 {
			return nil, fmt.Errorf("%s %s: listed twice or not resource[/subresource]", r.gv, r.name)
		}
		byGV[r.gv][r.name] = st
	}
	return out, nil
}

// writtenTypes: the schema names of the kinds the table lets clients
// write (create, update, patch): the roots of the server-side-apply schema.
func writtenTypes() ([]string, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range served {
		if !slices.ContainsFunc(r.verbs, func(v string) bool { return v == "create" || v == "update" || v == "patch" }) || r.shape == connect {
			continue
		}
		gv := r.gv
		if !r.kindGV.Empty() {
			gv = r.kindGV
		}
		name, err := scheme.ToOpenAPIDefinitionName(gv.WithKind(r.kind))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.gv, r.name, err)
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}
