// Package order is the start and stop ordering between pods declared with
// the podhost.io/after annotation: "db,cache" on pod app means app is
// admitted and started only once the pods db and cache of its namespace are
// Ready, and when they are removed together app terminates first.
//
// The package is pure: it parses the annotation, checks a set of pods for
// missing names and cycles, and sorts pods into levels (Levels for start,
// StopLevels for termination, e.g. at node shutdown).
package order

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// After returns the pod names p must follow, in annotation order, without
// blanks and duplicates. nil when the annotation is absent or empty.
func After(p *corev1.Pod) []string {
	v := strings.TrimSpace(p.Annotations[wellknown.AnnotationAfter])
	if v == "" {
		return nil
	}
	var out []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// HasAfter reports whether p declares dependencies.
func HasAfter(p *corev1.Pod) bool { return len(After(p)) > 0 }

// DepKeys returns the full names (namespace/name) p must follow.
func DepKeys(p *corev1.Pod) []string {
	names := After(p)
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, p.Namespace+"/"+n)
	}
	return out
}

// Problem is one pod whose ordering is invalid.
type Problem struct {
	Pod *corev1.Pod
	Err error // names the pod and the annotation
}

// CheckOptions choose what Check reports besides cycles and bad names.
type CheckOptions struct {
	// Missing reports dependencies on pods not in the set (apply time). The
	// source leaves them out: such a pod waits until its dependency appears.
	Missing bool
}

// Check reports, per pod and in full-name order, invalid names in the
// annotation, dependencies on itself or (with opts.Missing) on pods not in
// pods, and pods that are part of a dependency cycle.
func Check(pods []*corev1.Pod, opts CheckOptions) []Problem {
	g := newGraph(pods)
	var out []Problem
	for _, key := range g.keys {
		p := g.pods[key]
		var msgs []string
		for _, n := range After(p) {
			switch {
			case len(validation.IsDNS1123Subdomain(n)) > 0:
				msgs = append(msgs, fmt.Sprintf("%q is not a valid pod name", n))
			case n == p.Name:
				msgs = append(msgs, "a pod cannot wait for itself")
			case opts.Missing && g.pods[p.Namespace+"/"+n] == nil:
				msgs = append(msgs, fmt.Sprintf("pod %s/%s not found", p.Namespace, n))
			}
		}
		if c := g.cycles[key]; c != "" {
			msgs = append(msgs, "dependency cycle "+c)
		}
		if len(msgs) > 0 {
			out = append(out, Problem{Pod: p, Err: fmt.Errorf("pod %s: %s: %s", key, wellknown.AnnotationAfter, strings.Join(msgs, "; "))})
		}
	}
	return out
}

// Levels sorts pods for starting: level 0 holds the pods that depend on no
// pod of the set, level n the pods whose dependencies are all in earlier
// levels. Dependencies outside the set are ignored; pods in (or behind) a
// cycle come last, in one level. Each level is sorted by full name.
func Levels(pods []*corev1.Pod) [][]*corev1.Pod {
	g := newGraph(pods)
	done := map[string]bool{}
	var levels [][]*corev1.Pod
	for len(done) < len(g.keys) {
		var level []*corev1.Pod
		for _, key := range g.keys {
			if !done[key] && g.depsDone(key, done) {
				level = append(level, g.pods[key])
			}
		}
		if len(level) == 0 { // only cycles are left
			for _, key := range g.keys {
				if !done[key] {
					level = append(level, g.pods[key])
				}
			}
		}
		for _, p := range level {
			done[p.Namespace+"/"+p.Name] = true
		}
		levels = append(levels, level)
	}
	return levels
}

// StopLevels is Levels reversed: dependants terminate before what they
// depend on (node shutdown, removal of several pods).
func StopLevels(pods []*corev1.Pod) [][]*corev1.Pod {
	l := Levels(pods)
	slices.Reverse(l)
	return l
}

// graph is the dependency graph of a pod set, keyed by full name.
type graph struct {
	keys   []string // sorted
	pods   map[string]*corev1.Pod
	edges  map[string][]string // key → dependency keys within the set
	cycles map[string]string   // key → "a -> b -> a" for pods in a cycle
}

func newGraph(pods []*corev1.Pod) *graph {
	g := &graph{pods: map[string]*corev1.Pod{}, edges: map[string][]string{}, cycles: map[string]string{}}
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		if g.pods[key] == nil {
			g.keys = append(g.keys, key)
		}
		g.pods[key] = p
	}
	slices.SortFunc(g.keys, cmp.Compare[string])
	for _, key := range g.keys {
		for _, dep := range DepKeys(g.pods[key]) {
			if g.pods[dep] != nil && dep != key {
				g.edges[key] = append(g.edges[key], dep)
			}
		}
	}
	g.findCycles()
	return g
}

func (g *graph) depsDone(key string, done map[string]bool) bool {
	for _, d := range g.edges[key] {
		if !done[d] {
			return false
		}
	}
	return true
}

// findCycles marks every pod on a cycle with one cycle through it, found
// by a depth-first search from it (sets are small: manifests of one host).
func (g *graph) findCycles() {
	for _, start := range g.keys {
		if path := g.pathBack(start); path != nil {
			names := make([]string, 0, len(path)+1)
			for _, k := range path {
				names = append(names, g.pods[k].Name)
			}
			g.cycles[start] = strings.Join(append(names, g.pods[start].Name), " -> ")
		}
	}
}

// pathBack returns a path start → ... that leads back to start, or nil.
func (g *graph) pathBack(start string) []string {
	seen := map[string]bool{}
	var walk func(key string, path []string) []string
	walk = func(key string, path []string) []string {
		path = append(path, key)
		for _, d := range g.edges[key] {
			if d == start {
				return path
			}
			if seen[d] {
				continue
			}
			seen[d] = true
			if p := walk(d, path); p != nil {
				return p
			}
		}
		return nil
	}
	return walk(start, nil)
}
