package wait

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/jsonpath"
)

// choose picks the pods to wait for, from the pods as they are (the first
// sync): the names given, or those the selector (--all: every pod)
// matches. As kubectl: a missing name is NotFound, except for delete
// (nothing to wait for) and create (what it waits for); a selector that
// matches nothing is an error, except for delete.
func (w *podWait) choose() error {
	w.targets = []waitTarget{}
	if len(w.o.Names) > 0 {
		for _, name := range w.o.Names {
			t := waitTarget{namespace: w.o.Namespace, name: name}
			p := w.pods[t.key()]
			switch {
			case p != nil:
				t.uid, t.deleting = p.UID, p.DeletionTimestamp != nil
			case w.cond.kind == "delete":
				continue
			case w.cond.kind != "create":
				return &cmdutil.NotFoundError{Resource: "pods", Name: name}
			}
			w.targets = append(w.targets, t)
		}
		return nil
	}
	for _, p := range w.pods {
		if (w.o.AllNamespaces || p.Namespace == w.o.Namespace) && w.sel.Matches(labels.Set(p.Labels)) {
			w.targets = append(w.targets, waitTarget{namespace: p.Namespace, name: p.Name, uid: p.UID, deleting: p.DeletionTimestamp != nil})
		}
	}
	slices.SortFunc(w.targets, func(a, b waitTarget) int { return strings.Compare(a.key(), b.key()) })
	if len(w.targets) == 0 && w.cond.kind != "delete" {
		return errNoMatching
	}
	return nil
}

// advance prints the targets met, in order (kubectl waits for one after
// the other); errWaitDone when all are.
func (w *podWait) advance() error {
	for w.met < len(w.targets) {
		t := w.targets[w.met]
		ok, err := w.isMet(t)
		if err != nil {
			return &waitError{err: err}
		}
		if !ok {
			if w.once && w.cond.kind == "delete" {
				return &waitError{err: fmt.Errorf("timed out waiting for the condition on pods/%s", t.name)}
			}
			if w.once {
				return &waitError{err: fmt.Errorf("condition not met for pods/%s", t.name)}
			}
			return nil
		}
		fmt.Fprintf(w.out, "pod/%s condition met\n", t.name)
		w.met++
	}
	return errWaitDone
}

func (w *podWait) isMet(t waitTarget) (bool, error) {
	p := w.pods[t.key()]
	switch w.cond.kind {
	case "delete":
		// Gone, or replaced by a pod that is not stopping, or applied
		// again (the same UID) after it was seen stopping.
		return p == nil || p.DeletionTimestamp == nil && (p.UID != t.uid || t.deleting), nil
	case "create":
		return p != nil, nil
	}
	if p == nil {
		return false, nil // gone, or replaced and not seen yet: as kubectl, wait on
	}
	return w.cond.check(p)
}

// parseWaitFor parses --for as kubectl wait does.
func parseWaitFor(s string) (waitCondition, error) {
	switch lower := strings.ToLower(s); {
	case lower == "delete", lower == "create":
		return waitCondition{kind: lower}, nil
	case strings.HasPrefix(s, "condition="):
		name, value, ok := strings.Cut(strings.TrimPrefix(s, "condition="), "=")
		if !ok {
			value = "true"
		}
		if name == "" {
			return waitCondition{}, fmt.Errorf("--for=%s: a condition name is required (e.g. condition=Ready)", s)
		}
		return waitCondition{check: func(p *corev1.Pod) (bool, error) {
			for _, c := range p.Status.Conditions {
				if strings.EqualFold(string(c.Type), name) {
					return strings.EqualFold(string(c.Status), value), nil
				}
			}
			return false, nil
		}}, nil
	case strings.HasPrefix(s, "jsonpath="):
		return parseJSONPathWait(strings.TrimPrefix(s, "jsonpath="))
	case s == "":
		return waitCondition{}, errors.New("--for is required: delete, create, condition=NAME[=VALUE] or jsonpath='{EXPR}'[=VALUE]")
	}
	return waitCondition{}, fmt.Errorf("unrecognized condition: %q", s)
}

// parseJSONPathWait parses EXPR[=VALUE]: the expression's braces may hold
// "=" (a filter such as [?(@.type=="Ready")]).
func parseJSONPathWait(s string) (waitCondition, error) {
	expr, value, hasValue := splitJSONPathValue(s)
	if expr == "" {
		return waitCondition{}, errors.New("jsonpath expression cannot be empty")
	}
	if hasValue && value == "" {
		return waitCondition{}, errors.New("jsonpath wait value cannot be empty")
	}
	rel, err := printers.RelaxedJSONPath(expr)
	if err != nil {
		return waitCondition{}, err
	}
	jp := jsonpath.New("wait").AllowMissingKeys(true)
	if err := jp.Parse(rel); err != nil {
		return waitCondition{}, fmt.Errorf("error parsing jsonpath %s, %w", expr, err)
	}
	value = strings.Trim(value, `'"`)
	return waitCondition{check: func(p *corev1.Pod) (bool, error) {
		return jsonPathMet(jp, p, value, hasValue)
	}}, nil
}

// splitJSONPathValue splits "{.a[?(@.b=="c")].d}=x" after the closing
// brace, and ".a.b=x" at its "=".
func splitJSONPathValue(s string) (expr, value string, hasValue bool) {
	if strings.HasPrefix(s, "{") {
		if end := strings.LastIndex(s, "}"); end > 0 {
			rest := s[end+1:]
			value, hasValue = strings.CutPrefix(rest, "=")
			if !hasValue && rest != "" {
				return s, "", false // left for the parser to refuse
			}
			return s[:end+1], value, hasValue
		}
	}
	expr, value, hasValue = strings.Cut(s, "=")
	return expr, value, hasValue
}

func jsonPathMet(jp *jsonpath.JSONPath, p *corev1.Pod, value string, hasValue bool) (bool, error) {
	obj, err := printers.ToGeneric(p)
	if err != nil {
		return false, err
	}
	results, err := jp.FindResults(obj)
	if err != nil {
		return false, err
	}
	switch {
	case len(results) == 0 || len(results[0]) == 0:
		return false, nil
	case len(results) > 1:
		return false, errors.New("given jsonpath expression matches more than one list")
	case len(results[0]) > 1:
		return false, errors.New("given jsonpath expression matches more than one value")
	}
	if !hasValue {
		return true, nil
	}
	v := results[0][0].Interface()
	switch v.(type) {
	case map[string]any, []any:
		return false, errors.New("jsonpath leads to a nested object or list which is not supported")
	}
	return strings.TrimSpace(fmt.Sprint(v)) == strings.TrimSpace(value), nil
}
