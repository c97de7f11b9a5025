package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// check: the v3 documents describe exactly the served table, every
// resource with exactly its verbs (deprecated /watch/ paths included), and
// nothing else but the group-versions' own discovery path.
func check(docs map[string][]byte) error {
	got := map[string][]string{} // "gv resource" → verbs
	for p, doc := range docs {
		gv, ok := gvOfDocPath(p)
		if !ok {
			continue // api, apis, apis/<group>, version: discovery documents
		}
		var d struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			return fmt.Errorf("v3 %s: %w", p, err)
		}
		for path, item := range d.Paths {
			res, ok := resourceOfPath(path, "/"+p)
			if !ok {
				return fmt.Errorf("v3 %s: unexpected path %s", p, path)
			}
			if res == "" {
				continue // the group-version's resource list
			}
			key := gv.String() + " " + res
			for method, op := range item {
				v, err := verbOf(method, op)
				if err != nil {
					return fmt.Errorf("v3 %s %s %s: %w", p, method, path, err)
				}
				if v != "" && !slices.Contains(got[key], v) {
					got[key] = append(got[key], v)
				}
			}
		}
	}
	want := map[string][]string{}
	for _, r := range served {
		want[r.gv.String()+" "+r.name] = r.verbs
	}
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, w := slices.Sorted(slices.Values(got[k])), slices.Sorted(slices.Values(want[k]))
		if !slices.Equal(g, w) {
			diffs = append(diffs, fmt.Sprintf("%s: documents %v, table %v", k, g, w))
		}
		delete(got, k)
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		diffs = append(diffs, fmt.Sprintf("%s: documents %v, not in the table", k, got[k]))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the documents do not match the served table:\n  %s", strings.Join(diffs, "\n  "))
	}
	return nil
}

// gvOfDocPath: "api/v1" → v1, "apis/events.k8s.io/v1" → events.k8s.io/v1.
func gvOfDocPath(p string) (schema.GroupVersion, bool) {
	s := strings.Split(p, "/")
	switch {
	case len(s) == 2 && s[0] == "api":
		return schema.GroupVersion{Version: s[1]}, true
	case len(s) == 3 && s[0] == "apis":
		return schema.GroupVersion{Group: s[1], Version: s[2]}, true
	}
	return schema.GroupVersion{}, false
}

// resourceOfPath: "/api/v1/namespaces/{namespace}/pods/{name}/log" →
// "pods/log"; "" for the group-version's root.
func resourceOfPath(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"/")
	if !ok {
		return "", false
	}
	s := strings.Split(rest, "/")
	if s[0] == "" && len(s) == 1 {
		return "", true
	}
	if s[0] == "watch" {
		s = s[1:]
	}
	if len(s) > 2 && s[0] == "namespaces" && s[1] == "{namespace}" {
		s = s[2:]
	}
	switch {
	case len(s) == 1 || len(s) == 2 && s[1] == "{name}":
		return s[0], true
	case len(s) == 3 && s[1] == "{name}":
		return s[0] + "/" + s[2], true
	}
	return "", false
}

// verbOf: the discovery verb of an operation ("" for a path item's
// parameters).
func verbOf(method string, op json.RawMessage) (string, error) {
	if method == "parameters" {
		return "", nil
	}
	var o struct {
		Action string `json:"x-kubernetes-action"`
	}
	if err := json.Unmarshal(op, &o); err != nil {
		return "", err
	}
	switch o.Action {
	case "get", "list", "patch", "delete", "deletecollection":
		return o.Action, nil
	case "watch", "watchlist":
		return "watch", nil
	case "post":
		return "create", nil
	case "put":
		return "update", nil
	case "connect":
		switch method {
		case "get":
			return "get", nil
		case "post":
			return "create", nil
		}
	}
	return "", fmt.Errorf("unknown action %q", o.Action)
}
