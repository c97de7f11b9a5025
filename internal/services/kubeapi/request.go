package kubeapi

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestInfo is what a resource request's path and method say, as the API
// server's RequestInfoFactory reads them:
//
//	/api/v1/{resource}[/{name}[/{subresource}]]                      cluster-scoped, or every namespace
//	/api/v1/namespaces/{namespace}/{resource}[/{name}[/{subresource}]]
//	/apis/{group}/{version}/...                                      the same below a group
type requestInfo struct {
	gv          schema.GroupVersion
	namespace   string
	resource    *resource
	name        string
	subresource string
	verb        string // get list watch create update patch delete deletecollection
}

// parseRequest reads a resource request; its errors are 404s (an unknown
// path or resource) and 405s (a verb the resource does not have).
func parseRequest(r *http.Request) (*requestInfo, error) {
	parts := splitPath(r.URL.Path)
	ri := &requestInfo{}
	switch {
	case len(parts) >= 3 && parts[0] == "api" && parts[1] == "v1":
		ri.gv, parts = coreGV, parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		ri.gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return nil, apierrors.NewNotFound(schema.GroupResource{}, "")
	}
	// namespaces/{ns}/{resource}...: a namespaced request; namespaces and
	// namespaces/{ns} alone are the namespace resource itself.
	if len(parts) >= 3 && parts[0] == "namespaces" {
		ri.namespace, parts = parts[1], parts[2:]
	}
	ri.resource = lookup(ri.gv, parts[0])
	if ri.resource == nil || len(parts) > 3 || ri.namespace != "" && !ri.resource.namespaced {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: ri.gv.Group, Resource: parts[0]}, "")
	}
	if len(parts) > 1 {
		ri.name = parts[1]
	}
	if len(parts) > 2 {
		ri.subresource = parts[2]
	}
	ri.verb = verbOf(r, ri.name != "")
	if !ri.allowed() {
		if ri.subresource == "ephemeralcontainers" {
			return nil, noEphemeralContainers(ri)
		}
		return nil, apierrors.NewMethodNotSupported(ri.groupResource(), ri.verb)
	}
	return ri, nil
}

// splitPath: the path's non-empty segments.
func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// verbOf is the API verb of a request: GET is get, list or watch (watch=1
// or true); DELETE of a collection is deletecollection.
func verbOf(r *http.Request, named bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		w := r.URL.Query().Get("watch")
		switch {
		case w == "1" || w == "true":
			return "watch"
		case named:
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return strings.ToLower(r.Method)
}

// allowed: the resource (or subresource) has the verb. Connect
// subresources (exec, attach, portforward) take GET and POST.
func (ri *requestInfo) allowed() bool {
	verbs := ri.resource.verbs
	if ri.subresource != "" {
		verbs = nil
		for _, sub := range ri.resource.subresources {
			if sub.name == ri.subresource {
				verbs = sub.verbs
			}
		}
	}
	for _, v := range verbs {
		if v == ri.verb {
			return true
		}
	}
	return false
}

func (ri *requestInfo) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: ri.gv.Group, Resource: ri.resource.name}
}

// noEphemeralContainers answers a write of pods/ephemeralcontainers
// (`kubectl debug`): podhost runs no ephemeral containers, and says so
// rather than kubectl's "patch is not supported on resources of kind pods".
func noEphemeralContainers(ri *requestInfo) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: fmt.Sprintf("pods %q: ephemeral containers (kubectl debug) are not supported by podhost; use kubectl exec", ri.name),
		Details: &metav1.StatusDetails{Name: ri.name, Kind: "pods"},
	}}
}
