package kubeletapi

import (
	"net/http/httptest"
	"reflect"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

// The kubelet's attribute mapping (pkg/kubelet/server/auth_test.go's
// cases, with fine-grained authorization).
func TestRequestAttributes(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/containerLogs/default/web/app", "get", []string{"proxy"}},
		{"POST", "/exec/default/web/app", "create", []string{"proxy"}},
		{"GET", "/exec/default/web/app", "get", []string{"proxy"}},
		{"POST", "/portForward/default/web", "create", []string{"proxy"}},
		{"POST", "/attach/default/web/app", "create", []string{"proxy"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/podsX", "get", []string{"proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/metrics/resource", "get", []string{"metrics"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/logs/messages", "get", []string{"log"}},
		{"PUT", "/configz", "update", []string{"configz", "proxy"}},
		{"DELETE", "/x", "delete", []string{"proxy"}},
		{"PATCH", "/x", "patch", []string{"proxy"}},
		{"OPTIONS", "/x", "", []string{"proxy"}},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		u := &user.DefaultInfo{Name: "alice"}
		attrs := requestAttributes("box-1", u, r)
		var subs []string
		for _, a := range attrs {
			subs = append(subs, a.GetSubresource())
			if a.GetVerb() != tc.verb || a.GetResource() != "nodes" || a.GetName() != "box-1" || a.GetAPIVersion() != "v1" ||
				a.GetAPIGroup() != "" || a.GetNamespace() != "" || !a.IsResourceRequest() || a.GetUser() != u || a.GetPath() != tc.path {
				t.Errorf("%s %s: %+v", tc.method, tc.path, a)
			}
		}
		if !reflect.DeepEqual(subs, tc.subresources) {
			t.Errorf("%s %s: subresources %v, want %v", tc.method, tc.path, subs, tc.subresources)
		}
	}
}
