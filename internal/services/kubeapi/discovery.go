package kubeapi

import (
	"net/http"
	"runtime"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// KubernetesVersion is the Kubernetes API version served: the one of the
// k8s.io/api module podhost is built with (a test keeps them equal).
const KubernetesVersion = "v1.37.2"

// versionInfo is /version: the API level served, with podhost's own version
// as the build metadata kubectl ignores.
func (s *Server) versionInfo(w http.ResponseWriter, r *http.Request) {
	v := strings.TrimPrefix(KubernetesVersion, "v")
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	info := version.Info{Major: major, Minor: minor, GitVersion: KubernetesVersion + "+podhost." + s.opts.Version,
		GitTreeState: "clean", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	writeJSONRaw(w, &info)
}

// aggregated is the v2 aggregated discovery document of the legacy group
// (core: true) or of the named groups.
func aggregated(core bool) *apidiscoveryv2.APIGroupDiscoveryList {
	l := &apidiscoveryv2.APIGroupDiscoveryList{}
	for _, gv := range groupVersions() {
		if (gv.Group == "") != core {
			continue
		}
		vd := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, r := range resources {
			if r.gv == gv {
				vd.Resources = append(vd.Resources, r.discovery())
			}
		}
		l.Items = append(l.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group},
			Versions: []apidiscoveryv2.APIVersionDiscovery{vd}})
	}
	return l
}

func (r resource) discovery() apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if r.namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	d := apidiscoveryv2.APIResourceDiscovery{Resource: r.name, SingularResource: r.singular, Scope: scope,
		ResponseKind: &metav1.GroupVersionKind{Group: r.gv.Group, Version: r.gv.Version, Kind: r.kind},
		Verbs:        r.verbs, ShortNames: r.shortNames, Categories: r.categories}
	for _, sub := range r.subresources {
		d.Subresources = append(d.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: sub.name,
			ResponseKind: &metav1.GroupVersionKind{Group: r.gv.Group, Version: r.gv.Version, Kind: sub.kind},
			Verbs:        sub.verbs})
	}
	return d
}

// resourceList is the legacy discovery document of one group-version.
func resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: gv.String()}
	for _, r := range resources {
		if r.gv != gv {
			continue
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.name, SingularName: r.singular,
			Namespaced: r.namespaced, Kind: r.kind, Verbs: r.verbs, ShortNames: r.shortNames, Categories: r.categories})
		for _, sub := range r.subresources {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.name + "/" + sub.name,
				Namespaced: r.namespaced, Kind: sub.kind, Verbs: sub.verbs})
		}
	}
	return l
}

func apiGroup(gv schema.GroupVersion) metav1.APIGroup {
	gvd := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	return metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{gvd}, PreferredVersion: gvd}
}

// discoveryRoutes: /api, /api/v1, /apis, /apis/{group}, /apis/{group}/{version}.
func (s *Server) discoveryRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api", func(w http.ResponseWriter, r *http.Request) {
		s.discover(w, r, aggregated(true), &metav1.APIVersions{Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
	})
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, r *http.Request) {
		l := &metav1.APIGroupList{}
		for _, gv := range groupVersions() {
			if gv.Group != "" {
				l.Groups = append(l.Groups, apiGroup(gv))
			}
		}
		s.discover(w, r, aggregated(false), l)
	})
	mux.HandleFunc("GET /api/v1", func(w http.ResponseWriter, r *http.Request) {
		s.discover(w, r, nil, resourceList(coreGV))
	})
	mux.HandleFunc("GET /apis/{group}", func(w http.ResponseWriter, r *http.Request) {
		for _, gv := range groupVersions() {
			if gv.Group != "" && gv.Group == r.PathValue("group") {
				g := apiGroup(gv)
				s.discover(w, r, nil, &g)
				return
			}
		}
		s.notFound(w, r)
	})
	mux.HandleFunc("GET /apis/{group}/{version}", func(w http.ResponseWriter, r *http.Request) {
		gv := schema.GroupVersion{Group: r.PathValue("group"), Version: r.PathValue("version")}
		for _, g := range groupVersions() {
			if g == gv && g.Group != "" {
				s.discover(w, r, nil, resourceList(gv))
				return
			}
		}
		s.notFound(w, r)
	})
}

// discover answers with the aggregated document when the client asks for
// it (and there is one), else the legacy one.
func (s *Server) discover(w http.ResponseWriter, r *http.Request, agg *apidiscoveryv2.APIGroupDiscoveryList, legacy kruntime.Object) {
	a, err := negotiate(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Vary", "Accept")
	if a.discovery && agg != nil {
		writeObject(w, a, http.StatusOK, agg, apidiscoveryv2.SchemeGroupVersion)
		return
	}
	a.discovery, a.table, a.partial = false, false, false
	writeObject(w, a, http.StatusOK, legacy, unversioned)
}
