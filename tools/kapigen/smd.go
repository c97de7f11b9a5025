package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v2"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smd "sigs.k8s.io/structured-merge-diff/v6/schema"
)

// reachable: the types of roots and those they reference, and
// schemaconv's untyped types (which the converter itself names).
func reachable(types []smd.TypeDef, roots []string) ([]smd.TypeDef, error) {
	byName := map[string]smd.TypeDef{}
	for _, t := range types {
		byName[t.Name] = t
	}
	keep := map[string]bool{"__untyped_atomic_": true, "__untyped_deduced_": true}
	todo := slices.Clone(roots)
	for len(todo) > 0 {
		n := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if keep[n] {
			continue
		}
		t, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("structured-merge-diff schema: no type %s", n)
		}
		keep[n] = true
		todo = append(todo, refs(t.Atom, nil)...)
	}
	return slices.DeleteFunc(types, func(t smd.TypeDef) bool { return !keep[t.Name] }), nil
}

// refs appends the names of the types a references.
func refs(a smd.Atom, out []string) []string {
	ref := func(r smd.TypeRef) {
		if r.NamedType != nil {
			out = append(out, *r.NamedType)
		} else {
			out = refs(r.Inlined, out)
		}
	}
	if a.Map != nil {
		for _, f := range a.Map.Fields {
			ref(f.Type)
		}
		ref(a.Map.ElementType)
	}
	if a.List != nil {
		ref(a.List.ElementType)
	}
	return out
}

// sortFields sorts the fields of a's maps by name, as schemaconv's proto
// path does (its OpenAPI path takes them from a Go map): the merge does not
// depend on their order.
func sortFields(a *smd.Atom) {
	if a.Map != nil {
		slices.SortFunc(a.Map.Fields, func(x, y smd.StructField) int { return strings.Compare(x.Name, y.Name) })
		for i := range a.Map.Fields {
			sortRef(&a.Map.Fields[i].Type)
		}
		sortRef(&a.Map.ElementType)
	}
	if a.List != nil {
		sortRef(&a.List.ElementType)
	}
}

func sortRef(r *smd.TypeRef) {
	if r.Inlined.Map != nil || r.Inlined.List != nil {
		sortFields(&r.Inlined)
	}
}

// smdSchema is the structured-merge-diff schema server-side apply merges
// with: what kube-apiserver's type converter builds at start from its
// definitions (managedfields.NewTypeConverter: schemaconv of the v3
// components), computed here once, and kept to the types of roots (the
// kinds clients write) and those they reference. schemaconv emits the
// types and their fields in map order; both are sorted by name, so the
// YAML is stable.
const gvkExtension = "x-kubernetes-group-version-kind"

func smdSchema(docs map[string][]byte, roots []string) ([]byte, error) {
	models := map[string]*spec.Schema{}
	for _, p := range slices.Sorted(maps.Keys(docs)) {
		var doc spec3.OpenAPI
		if err := json.Unmarshal(docs[p], &doc); err != nil {
			return nil, fmt.Errorf("v3 %s: %w", p, err)
		}
		if doc.Components == nil {
			continue
		}
		for name, s := range doc.Components.Schemas {
			// Each document lists the kinds of its own group-version;
			// schemaconv does not read them.
			delete(s.Extensions, gvkExtension)
			if prev, ok := models[name]; ok && !reflect.DeepEqual(prev, s) {
				return nil, fmt.Errorf("v3 %s: schema %s differs from another document's", p, name)
			}
			models[name] = s
		}
	}
	s, err := schemaconv.ToSchemaFromOpenAPI(models, false)
	if err != nil {
		return nil, fmt.Errorf("structured-merge-diff schema: %w", err)
	}
	if s.Types, err = reachable(s.Types, roots); err != nil {
		return nil, err
	}
	slices.SortFunc(s.Types, func(a, b smd.TypeDef) int { return strings.Compare(a.Name, b.Name) })
	for i := range s.Types {
		sortFields(&s.Types[i].Atom)
	}
	out, err := yaml.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("structured-merge-diff schema: %w", err)
	}
	return out, nil
}
