package kubeapi

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/services/kubeapi/openapi"
)

// TestDiscoveryMatchesOpenAPI: the resources table (discovery, routes) and
// the generated OpenAPI documents (tools/kapigen's served table) name the
// same resources with the same verbs.
func TestDiscoveryMatchesOpenAPI(t *testing.T) {
	ops, err := openapi.Operations()
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string][]string{}
	for _, o := range ops {
		k := groupOf(o.Document) + "/" + o.Resource
		if !slices.Contains(doc[k], o.Verb) {
			doc[k] = append(doc[k], o.Verb)
		}
	}
	ours := map[string][]string{}
	for _, r := range resources {
		ours[r.gv.Group+"/"+r.name] = slices.Clone(r.verbs)
		for _, sub := range r.subresources {
			ours[r.gv.Group+"/"+r.name+"/"+sub.name] = slices.Clone(sub.verbs)
		}
	}
	for k, v := range ours {
		sort.Strings(v)
		w := doc[k]
		sort.Strings(w)
		if !slices.Equal(v, w) {
			t.Errorf("%s: discovery %v, OpenAPI %v", k, v, w)
		}
	}
	for k := range doc {
		if ours[k] == nil {
			t.Errorf("%s: in the OpenAPI documents, not served", k)
		}
	}
}

// groupOf is a document's group: "apis/events.k8s.io/v1" -> "events.k8s.io",
// "api/v1" -> "".
func groupOf(document string) string {
	rest, ok := strings.CutPrefix(document, "apis/")
	if !ok {
		return ""
	}
	g, _, _ := strings.Cut(rest, "/")
	return g
}
