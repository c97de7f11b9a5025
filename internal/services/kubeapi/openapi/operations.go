package openapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Operation is one operation of the v3 documents, what a server's routes
// and discovery can be checked against.
type Operation struct {
	Document string // the v3 index's path: "api/v1", "apis/events.k8s.io/v1"
	Path     string // "/api/v1/namespaces/{namespace}/pods/{name}/exec"
	Method   string // "GET", "POST", "PUT", "PATCH", "DELETE"
	// Action is x-kubernetes-action: get list watch watchlist post put
	// patch delete deletecollection connect.
	Action string
	Kind   schema.GroupVersionKind // x-kubernetes-group-version-kind
	// Resource ("pods", "pods/exec") and Verb are the operation as
	// discovery lists it: get list watch create update patch delete
	// deletecollection (a connect is get on GET, create on POST).
	Resource, Verb string
}

// Operations are the operations on resources of the group-version
// documents (not the discovery paths: /api/v1/, /apis/...), sorted by
// document, path and method; deprecated /watch/ paths included.
func Operations() ([]Operation, error) {
	idx, err := index()
	if err != nil {
		return nil, err
	}
	var out []Operation
	for _, name := range slices.Sorted(maps.Keys(idx)) {
		p, ok := strings.CutPrefix(strings.TrimSuffix(name, ".json"), "v3/")
		if !ok || !isGroupVersion(p) {
			continue
		}
		ops, err := operations(p, idx[name])
		if err != nil {
			return nil, err
		}
		out = append(out, ops...)
	}
	return out, nil
}

// isGroupVersion: api/<v> or apis/<g>/<v>.
func isGroupVersion(p string) bool {
	s := strings.Split(p, "/")
	return len(s) == 2 && s[0] == "api" || len(s) == 3 && s[0] == "apis"
}

type v3Operation struct {
	Action string                  `json:"x-kubernetes-action"`
	Kind   schema.GroupVersionKind `json:"x-kubernetes-group-version-kind"`
}

func operations(doc string, f file) ([]Operation, error) {
	b, err := f.bytes()
	if err != nil {
		return nil, fmt.Errorf("openapi: v3 %s: %w", doc, err)
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("openapi: v3 %s: %w", doc, err)
	}
	var out []Operation
	for path, item := range d.Paths {
		res := resourceOf(strings.TrimPrefix(path, "/"+doc+"/"))
		for method, raw := range item {
			if method == "parameters" || res == "" {
				continue
			}
			var op v3Operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("openapi: v3 %s %s %s: %w", doc, method, path, err)
			}
			m := strings.ToUpper(method)
			out = append(out, Operation{Document: doc, Path: path, Method: m, Action: op.Action,
				Kind: op.Kind, Resource: res, Verb: verb(op.Action, m)})
		}
	}
	slices.SortFunc(out, func(a, b Operation) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Method, b.Method))
	})
	return out, nil
}

// resourceOf: "namespaces/{namespace}/pods/{name}/log" → "pods/log",
// "watch/nodes" → "nodes"; "" for the group-version's own path.
func resourceOf(rel string) string {
	s := strings.Split(strings.TrimPrefix(rel, "watch/"), "/")
	if len(s) > 2 && s[0] == "namespaces" && s[1] == "{namespace}" {
		s = s[2:]
	}
	switch {
	case len(s) == 3 && s[1] == "{name}":
		return s[0] + "/" + s[2]
	case len(s) <= 2:
		return s[0]
	}
	return rel
}

// verb is the discovery verb of an action.
func verb(action, method string) string {
	switch action {
	case "watchlist":
		return "watch"
	case "post":
		return "create"
	case "put":
		return "update"
	case "connect":
		if method == "POST" {
			return "create"
		}
		return "get"
	}
	return action
}
