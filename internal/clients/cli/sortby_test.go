package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/services/api"
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

// sortPod is a pod with what the sort tests sort by: a start time, a
// restart count (negative: no container status) and labels.
func sortPod(name string, started time.Time, restarts int32, labels map[string]string) corev1.Pod {
	p := *webPod()
	p.Name, p.Labels = name, labels
	if !started.IsZero() {
		p.Status.StartTime = &metav1.Time{Time: started}
	}
	if restarts >= 0 {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: restarts, Ready: true}}
	}
	return p
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

// --sort-by as kubectl's sorter: numbers by value, strings as quantities or
// in natural order, times chronologically, missing fields first, equal
// values in their order; the expression with or without braces and dot.
func TestPodSorter(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	pods := []corev1.Pod{
		sortPod("web10", t0.Add(2*time.Hour), 10, map[string]string{"mem": "1Gi", "rank": "b"}),
		sortPod("web2", t0.Add(-time.Hour), 9, map[string]string{"mem": "100Mi"}),
		sortPod("db", time.Time{}, -1, map[string]string{"mem": "500Mi", "rank": "a"}),
		sortPod("cache", t0, 0, map[string]string{"mem": "2Gi", "rank": "b"}),
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
		{"{.status.containerStatuses[0].restartCount}", []string{"db", "cache", "web2", "web10"}},
		{".metadata.labels.mem", []string{"web2", "db", "web10", "cache"}},
		{".metadata.labels.rank", []string{"web2", "db", "web10", "cache"}}, // missing first; equal b's keep their order
	} {
		s, err := newPodSorter(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got := slices.Clone(pods)
		if err := s.sort(got); err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if names := podNames(got); !slices.Equal(names, tc.want) {
			t.Errorf("--sort-by %s: %v, want %v", tc.expr, names, tc.want)
		}
	}
}

func TestPodSorterErrors(t *testing.T) {
	pods := []corev1.Pod{sortPod("a", time.Time{}, 1, map[string]string{"x": "1"}), sortPod("b", time.Time{}, 2, map[string]string{"x": "2"})}
	for _, tc := range []struct{ expr, want string }{
		{"{.metadata.name", `--sort-by "{.metadata.name": unexpected path string`},
		{".status.containerStatuses[0", `--sort-by ".status.containerStatuses[0": error parsing jsonpath {.status.containerStatuses[0}: `},
		{".status.nope", `--sort-by: couldn't find any field with path "{.status.nope}" in the list of objects`},
		{".metadata.labels", "--sort-by: field {.metadata.labels} is an unsortable type: object (only numbers and strings sort)"},
		{".status.containerStatuses[0].ready", "--sort-by: field {.status.containerStatuses[0].ready} is an unsortable type: boolean"},
		{".status.containerStatuses[3].name", "--sort-by: field {.status.containerStatuses[3].name} of pod default/a: array index out of bounds"},
	} {
		s, err := newPodSorter(tc.expr)
		if err == nil {
			err = s.sort(slices.Clone(pods))
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--sort-by %s: %v, want one line %q…", tc.expr, err, tc.want)
		}
	}
	// no pods: nothing to sort, nothing missing
	if s, _ := newPodSorter(".status.nope"); s.sort(nil) != nil {
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

// --sort-by in get: every list output, the table even of one named pod,
// not one named pod in the other outputs; a bad expression fails before
// the daemon is asked.
func TestGetSortBy(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	b, a, c := sortPod("b", t0, 3, nil), sortPod("a", t0, 12, nil), sortPod("c", t0, -1, nil)
	sock := serve(t, &fakeDaemon{runtime: api.RuntimeStatus{Healthy: true}, pods: []*corev1.Pod{&b, &a, &c}})
	restarts := "{.status.containerStatuses[0].restartCount}"
	for _, tc := range []struct {
		name    string
		o       GetOptions
		want    []string // names, in the order printed
		wantErr string
	}{
		{"table", GetOptions{SortBy: restarts, NoHeaders: true}, []string{"c", "b", "a"}, ""},
		{"wide", GetOptions{SortBy: ".metadata.name", Output: "wide"}, []string{"NAME", "a", "b", "c"}, ""},
		{"name", GetOptions{SortBy: ".metadata.name", Output: "name"}, []string{"pod/a", "pod/b", "pod/c"}, ""},
		{"custom-columns", GetOptions{SortBy: restarts, Output: "custom-columns=N:.metadata.name"}, []string{"N", "c", "b", "a"}, ""},
		{"jsonpath", GetOptions{SortBy: restarts, Output: `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`}, []string{"c", "b", "a"}, ""},
		{"one pod, jsonpath: not a list", GetOptions{SortBy: ".status.nope", Names: []string{"a"}, Output: "jsonpath={.metadata.name}"}, []string{"a"}, ""},
		{"one pod, table: sorted", GetOptions{SortBy: ".status.nope", Names: []string{"a"}}, nil, `couldn't find any field with path "{.status.nope}"`},
		{"unsortable", GetOptions{SortBy: ".spec"}, nil, "--sort-by: field {.spec} is an unsortable type: object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Socket = sock
			var out bytes.Buffer
			err := Get(context.Background(), tc.o, IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				got = append(got, strings.Fields(line)[0])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v:\n%s", got, tc.want, out.String())
			}
		})
	}
	for _, format := range []string{"json", "yaml"} {
		var out bytes.Buffer
		if err := Get(context.Background(), GetOptions{Socket: sock, SortBy: restarts, Output: format}, IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}); err != nil {
			t.Fatal(err)
		}
		var list corev1.PodList
		if err := yaml.Unmarshal(out.Bytes(), &list); err != nil { // JSON is YAML
			t.Fatal(err)
		}
		if names := podNames(list.Items); !slices.Equal(names, []string{"c", "b", "a"}) {
			t.Errorf("-o %s: items %v, want c b a", format, names)
		}
	}
	noDaemon := filepath.Join(t.TempDir(), "none.sock")
	err := Get(context.Background(), GetOptions{Socket: noDaemon, SortBy: "{.metadata.name"}, IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	if err == nil || !strings.HasPrefix(err.Error(), `--sort-by "{.metadata.name": `) {
		t.Errorf("bad --sort-by without a daemon: %v", err)
	}
}

// With -w, --sort-by orders the first table only (when it has more than
// one row, as kubectl's sorting printer); the lines after it come as the
// changes do.
func TestGetSortByWatch(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	b, a := sortPod("b", t0, 0, nil), sortPod("a", t0, 0, nil)
	b.UID, a.UID = "ub", "ua"
	for _, tc := range []struct {
		o     GetOptions
		pods  []corev1.Pod
		sorts bool
	}{
		{GetOptions{Watch: true, SortBy: ".metadata.name"}, []corev1.Pod{b, a}, true},
		{GetOptions{Watch: true, SortBy: ".status.nope"}, []corev1.Pod{b}, false}, // one row: not sorted, so no error
		{GetOptions{SortBy: ".status.nope"}, []corev1.Pod{b}, true},
		{GetOptions{SortBy: ".status.nope", Output: "json", Names: []string{"b"}}, []corev1.Pod{b}, false},
		{GetOptions{SortBy: ".status.nope", Output: "json"}, []corev1.Pod{b}, true},
	} {
		if got := tc.o.sorts(tc.pods); got != tc.sorts {
			t.Errorf("%+v: sorts(%d pods) = %v, want %v", tc.o, len(tc.pods), got, tc.sorts)
		}
	}
	o := GetOptions{Watch: true, SortBy: ".metadata.name", NoHeaders: true}
	s, err := newPodSorter(o.SortBy)
	if err != nil {
		t.Fatal(err)
	}
	pods := []corev1.Pod{b, a}
	if err := s.sort(pods); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := newPodWatcher(&lineWriter{w: &out}, o, func(*corev1.Pod) bool { return true }, func() time.Time { return t0 })
	w.initial(pods)
	z := sortPod("0-first-by-name", t0, 0, nil)
	z.UID = "uz"
	w.event(api.WatchEvent{Type: api.WatchAdded, Object: z})
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		got = append(got, strings.Fields(line)[0])
	}
	if want := []string{"a", "b", "0-first-by-name"}; !slices.Equal(got, want) {
		t.Errorf("watch lines %v, want %v", got, want)
	}
}
