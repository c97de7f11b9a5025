package printers

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/jsonpath"
)

// PodSorter orders pods as kubectl get's --sort-by (kubectl/pkg/cmd/get,
// sorter.go) orders the unstructured objects it lists: by the first value
// the JSONPath finds in each pod's JSON form. Numbers compare by value;
// strings as quantities when both parse as ones ("100Mi" < "1Gi"), else in
// natural order ("web2" < "web10"; RFC 3339 times chronologically); a pod
// without the field, or with null there, comes first. Other values
// (booleans, objects, arrays) and mixed types cannot be sorted: an error,
// as with kubectl.
type PodSorter struct {
	field string // the expression as parsed, braced: {.status.startTime}
	path  *jsonpath.JSONPath
}

// NewPodSorter parses a --sort-by expression, which kubectl accepts with or
// without braces and leading dot; nil for "" (no sorting).
func NewPodSorter(expr string) (*PodSorter, error) {
	if expr == "" {
		return nil, nil
	}
	field, err := RelaxedJSONPath(expr)
	if err != nil {
		return nil, fmt.Errorf("--sort-by %q: %w", expr, err)
	}
	jp := jsonpath.New("sorting").AllowMissingKeys(true)
	if err := jp.Parse(field); err != nil {
		return nil, fmt.Errorf("--sort-by %q: error parsing jsonpath %s: %w", expr, field, err)
	}
	return &PodSorter{field: field, path: jp}, nil
}

// sortKey is what a pod sorts by: the first value found, as JSON decodes it.
type sortKey struct {
	value any
	found bool
}

// Sort orders pods in place; pods that compare equal keep their order. As
// kubectl, it fails when no pod has the field (a likely typo), unless there
// are no pods.
func (s *PodSorter) Sort(pods []corev1.Pod) error {
	if s == nil || len(pods) == 0 {
		return nil
	}
	keys := make([]sortKey, len(pods))
	found := false
	for i := range pods {
		k, err := s.key(&pods[i])
		if err != nil {
			return err
		}
		keys[i], found = k, found || k.found
	}
	if !found {
		return fmt.Errorf("--sort-by: couldn't find any field with path %q in the list of objects", s.field)
	}
	order := make([]int, len(pods))
	for i := range order {
		order[i] = i
	}
	var cmpErr error
	slices.SortStableFunc(order, func(a, b int) int {
		c, err := compareKeys(keys[a], keys[b])
		if err != nil && cmpErr == nil {
			cmpErr = fmt.Errorf("--sort-by: field %s %w", s.field, err)
		}
		return c
	})
	if cmpErr != nil {
		return cmpErr
	}
	sorted := make([]corev1.Pod, len(pods))
	for i, j := range order {
		sorted[i] = pods[j]
	}
	copy(pods, sorted)
	return nil
}

// key finds p's value at the sorter's path.
func (s *PodSorter) key(p *corev1.Pod) (sortKey, error) {
	obj, err := ToGeneric(p)
	if err != nil {
		return sortKey{}, err
	}
	results, err := s.path.FindResults(obj)
	if err != nil {
		return sortKey{}, fmt.Errorf("--sort-by: field %s of pod %s/%s: %w", s.field, p.Namespace, p.Name, err)
	}
	if len(results) == 0 || len(results[0]) == 0 {
		return sortKey{}, nil
	}
	return sortKey{value: results[0][0].Interface(), found: true}, nil
}

// compareKeys is -1, 0 or +1 as a sorts before, with or after b; a missing
// field or a null sorts first.
func compareKeys(a, b sortKey) (int, error) {
	switch {
	case !a.found || !b.found:
		return boolCompare(b.found, a.found), nil
	case a.value == nil || b.value == nil:
		return boolCompare(b.value != nil, a.value != nil), nil
	}
	switch x := a.value.(type) {
	case float64:
		if y, ok := b.value.(float64); ok {
			return boolCompare(x < y, y < x), nil
		}
	case string:
		if y, ok := b.value.(string); ok {
			return compareStrings(x, y), nil
		}
	default:
		return 0, fmt.Errorf("is an unsortable type: %s (only numbers and strings sort)", jsonType(a.value))
	}
	return 0, fmt.Errorf("is an unsortable type: a %s in one pod, a %s in another", jsonType(a.value), jsonType(b.value))
}

// boolCompare is -1 when less, +1 when greater, else 0.
func boolCompare(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

// compareStrings orders two strings as kubectl's sorter: as quantities when
// both are ones, else in natural order.
func compareStrings(a, b string) int {
	qa, errA := resource.ParseQuantity(a)
	qb, errB := resource.ParseQuantity(b)
	if errA == nil && errB == nil {
		return qa.Cmp(qb)
	}
	return boolCompare(naturalLess(a, b), naturalLess(b, a))
}

// naturalLess is the natural order kubectl sorts strings by
// (github.com/fvbommel/sortorder's NaturalLess): runs of ASCII digits
// compare by their value, the one with fewer leading zeros first when the
// values are equal ("2" < "02" < "10"); a digit sorts before any other
// byte; other bytes compare bytewise.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := isDigit(a[0]), isDigit(b[0])
		switch {
		case da != db:
			return da
		case !da:
			if a[0] != b[0] {
				return a[0] < b[0]
			}
			a, b = a[1:], b[1:]
		default:
			var za, zb int
			var na, nb string
			za, na, a = cutNumber(a)
			zb, nb, b = cutNumber(b)
			switch {
			case len(na) != len(nb):
				return len(na) < len(nb)
			case na != nb:
				return na < nb
			case za != zb:
				return za < zb
			}
		}
	}
	return len(a) < len(b)
}

// cutNumber splits s, which starts with a digit, into the count of its
// leading zeros, the digits after them and the rest.
func cutNumber(s string) (zeros int, digits, rest string) {
	for zeros < len(s) && s[zeros] == '0' {
		zeros++
	}
	end := zeros
	for end < len(s) && isDigit(s[end]) {
		end++
	}
	return zeros, s[zeros:end], s[end:]
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
