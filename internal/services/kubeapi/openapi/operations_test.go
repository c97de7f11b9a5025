package openapi

import (
	"slices"
	"testing"
)

func TestOperations(t *testing.T) {
	ops, err := Operations()
	if err != nil {
		t.Fatal(err)
	}
	verbs := map[string][]string{} // "document resource" → verbs
	for _, o := range ops {
		if o.Resource == "" || o.Verb == "" || o.Action == "" || o.Kind.Kind == "" {
			t.Errorf("incomplete: %+v", o)
		}
		k := o.Document + " " + o.Resource
		if !slices.Contains(verbs[k], o.Verb) {
			verbs[k] = append(verbs[k], o.Verb)
		}
	}
	for k, want := range map[string][]string{
		"api/v1 pods":                       {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
		"api/v1 pods/exec":                  {"create", "get"},
		"api/v1 pods/log":                   {"get"},
		"api/v1 pods/eviction":              {"create"},
		"api/v1 namespaces":                 {"get", "list", "watch"},
		"apis/events.k8s.io/v1 events":      {"get", "list", "watch"},
		"apis/metrics.k8s.io/v1beta1 nodes": {"get", "list"},
		"apis/authorization.k8s.io/v1 selfsubjectaccessreviews": {"create"},
	} {
		if got := slices.Sorted(slices.Values(verbs[k])); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", k, got, want)
		}
	}
	i := slices.IndexFunc(ops, func(o Operation) bool { return o.Path == "/api/v1/namespaces/{namespace}/pods/{name}/eviction" })
	if i < 0 || ops[i].Method != "POST" || ops[i].Kind.Group != "policy" || ops[i].Kind.Kind != "Eviction" {
		t.Errorf("eviction: %+v", ops[max(i, 0)])
	}
}
