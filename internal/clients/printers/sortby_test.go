package printers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/clients/clienttest"
	corev1 "k8s.io/api/core/v1"
)

func TestNaturalLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		less bool
	}{
		{"web2", "web10", true},
		{"web10", "web2", false},
		{"a", "b", true},
		{"a", "ab", true},
		{"ab", "a", false},
		{"2", "02", true},  // fewer leading zeros first
		{"02", "10", true}, // then by value
		{"1a", "a", true},  // digits before other bytes
		{"a", "1a", false},
		{"10.88.0.9", "10.88.0.10", true},
		{"2026-01-02T00:00:00Z", "2026-01-10T00:00:00Z", true},
		{"same", "same", false},
		{"", "a", true},
		{"x007y", "x7y", false},
	} {
		if got := naturalLess(tc.a, tc.b); got != tc.less {
			t.Errorf("naturalLess(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.less)
		}
	}
}

// --sort-by as kubectl's sorter: numbers by value, strings as quantities or
// in natural order, times chronologically, missing fields first, equal
// values in their order; the expression with or without braces and dot.
func TestPodSorter(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	pods := []corev1.Pod{
		clienttest.SortPod("web10", t0.Add(2*time.Hour), 10, map[string]string{"mem": "1Gi", "rank": "b"}),
		clienttest.SortPod("web2", t0.Add(-time.Hour), 9, map[string]string{"mem": "100Mi"}),
		clienttest.SortPod("db", time.Time{}, -1, map[string]string{"mem": "500Mi", "rank": "a"}),
		clienttest.SortPod("cache", t0, 0, map[string]string{"mem": "2Gi", "rank": "b"}),
	}
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"{.metadata.name}", []string{"cache", "db", "web2", "web10"}},
		{".metadata.name", []string{"cache", "db", "web2", "web10"}},
		{"metadata.name", []string{"cache", "db", "web2", "web10"}},
		{"{metadata.name}", []string{"cache", "db", "web2", "web10"}},
		{".status.startTime", []string{"db", "web2", "cache", "web10"}},
		{".metadata.creationTimestamp", []string{"db", "web2", "cache", "web10"}},
		{"{.status.containerStatuses[0].restartCount}", []string{"db", "cache", "web2", "web10"}},
		{".metadata.labels.mem", []string{"web2", "db", "web10", "cache"}},
		{".metadata.labels.rank", []string{"web2", "db", "web10", "cache"}}, // missing first; equal b's keep their order
	} {
		s, err := NewPodSorter(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got := slices.Clone(pods)
		if err := s.Sort(got); err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if names := clienttest.PodNames(got); !slices.Equal(names, tc.want) {
			t.Errorf("--sort-by %s: %v, want %v", tc.expr, names, tc.want)
		}
	}
}

func TestPodSorterErrors(t *testing.T) {
	pods := []corev1.Pod{clienttest.SortPod("a", time.Time{}, 1, map[string]string{"x": "1"}), clienttest.SortPod("b", time.Time{}, 2, map[string]string{"x": "2"})}
	for _, tc := range []struct{ expr, want string }{
		{"{.metadata.name", `--sort-by "{.metadata.name": unexpected path string`},
		{".status.containerStatuses[0", `--sort-by ".status.containerStatuses[0": error parsing jsonpath {.status.containerStatuses[0}: `},
		{".status.nope", `--sort-by: couldn't find any field with path "{.status.nope}" in the list of objects`},
		{".metadata.labels", "--sort-by: field {.metadata.labels} is an unsortable type: object (only numbers and strings sort)"},
		{".status.containerStatuses[0].ready", "--sort-by: field {.status.containerStatuses[0].ready} is an unsortable type: boolean"},
		{".status.containerStatuses[3].name", "--sort-by: field {.status.containerStatuses[3].name} of pod default/a: array index out of bounds"},
	} {
		s, err := NewPodSorter(tc.expr)
		if err == nil {
			err = s.Sort(slices.Clone(pods))
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--sort-by %s: %v, want one line %q…", tc.expr, err, tc.want)
		}
	}
	// no pods: nothing to sort, nothing missing
	if s, _ := NewPodSorter(".status.nope"); s.Sort(nil) != nil {
		t.Error("sorting no pods failed")
	}
}

func TestCompareKeys(t *testing.T) {
	missing, null := sortKey{}, sortKey{found: true}
	num := func(f float64) sortKey { return sortKey{value: f, found: true} }
	str := func(s string) sortKey { return sortKey{value: s, found: true} }
	for _, tc := range []struct {
		a, b sortKey
		want int
	}{
		{missing, num(1), -1}, {num(1), missing, 1}, {missing, missing, 0},
		{null, str("a"), -1}, {str("a"), null, 1}, {null, null, 0}, {missing, null, -1},
		{num(2), num(10), -1}, {num(10), num(2), 1}, {num(3), num(3), 0},
		{str("500m"), str("2"), -1}, {str("1Gi"), str("1024Mi"), 0},
		{str("web2"), str("web10"), -1},
	} {
		if got, err := compareKeys(tc.a, tc.b); err != nil || got != tc.want {
			t.Errorf("compareKeys(%v, %v) = %d, %v; want %d", tc.a, tc.b, got, err, tc.want)
		}
	}
	if _, err := compareKeys(num(1), str("a")); err == nil || !strings.Contains(err.Error(), "a number in one pod, a string in another") {
		t.Errorf("mixed types: %v", err)
	}
}
