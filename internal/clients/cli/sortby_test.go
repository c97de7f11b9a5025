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
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/services/api"
)

// --sort-by in get: every list output, the table even of one named pod,
// not one named pod in the other outputs; a bad expression fails before
// the daemon is asked.
func TestGetSortBy(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	b, a, c := clienttest.SortPod("b", t0, 3, nil), clienttest.SortPod("a", t0, 12, nil), clienttest.SortPod("c", t0, -1, nil)
	sock := serve(t, &clienttest.FakeDaemon{RuntimeStatus: api.RuntimeStatus{Healthy: true}, PodList: []*corev1.Pod{&b, &a, &c}})
	restarts := "{.status.containerStatuses[0].restartCount}"
	for _, tc := range []struct {
		name    string
		o       GetOptions
		want    []string // names, in the order printed
		wantErr string
	}{
		{"table", GetOptions{Namespace: "default", SortBy: restarts, NoHeaders: true}, []string{"c", "b", "a"}, ""},
		{"wide", GetOptions{Namespace: "default", SortBy: ".metadata.name", Output: "wide"}, []string{"NAME", "a", "b", "c"}, ""},
		{"name", GetOptions{Namespace: "default", SortBy: ".metadata.name", Output: "name"}, []string{"pod/a", "pod/b", "pod/c"}, ""},
		{"custom-columns", GetOptions{Namespace: "default", SortBy: restarts, Output: "custom-columns=N:.metadata.name"}, []string{"N", "c", "b", "a"}, ""},
		{"jsonpath", GetOptions{Namespace: "default", SortBy: restarts, Output: `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`}, []string{"c", "b", "a"}, ""},
		{"one pod, jsonpath: not a list", GetOptions{Namespace: "default", SortBy: ".status.nope", Names: []string{"a"}, Output: "jsonpath={.metadata.name}"}, []string{"a"}, ""},
		{"one pod, table: sorted", GetOptions{Namespace: "default", SortBy: ".status.nope", Names: []string{"a"}}, nil, `couldn't find any field with path "{.status.nope}"`},
		{"unsortable", GetOptions{Namespace: "default", SortBy: ".spec"}, nil, "--sort-by: field {.spec} is an unsortable type: object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Socket = sock
			var out bytes.Buffer
			err := Get(context.Background(), tc.o, cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
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
		if err := Get(context.Background(), GetOptions{Namespace: "default", Socket: sock, SortBy: restarts, Output: format}, cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}); err != nil {
			t.Fatal(err)
		}
		var list corev1.PodList
		if err := yaml.Unmarshal(out.Bytes(), &list); err != nil { // JSON is YAML
			t.Fatal(err)
		}
		if names := clienttest.PodNames(list.Items); !slices.Equal(names, []string{"c", "b", "a"}) {
			t.Errorf("-o %s: items %v, want c b a", format, names)
		}
	}
	noDaemon := filepath.Join(t.TempDir(), "none.sock")
	err := Get(context.Background(), GetOptions{Namespace: "default", Socket: noDaemon, SortBy: "{.metadata.name"}, cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	if err == nil || !strings.HasPrefix(err.Error(), `--sort-by "{.metadata.name": `) {
		t.Errorf("bad --sort-by without a daemon: %v", err)
	}
}

// With -w, --sort-by orders the first table only (when it has more than
// one row, as kubectl's sorting printer); the lines after it come as the
// changes do.
func TestGetSortByWatch(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	b, a := clienttest.SortPod("b", t0, 0, nil), clienttest.SortPod("a", t0, 0, nil)
	b.UID, a.UID = "ub", "ua"
	for _, tc := range []struct {
		o     GetOptions
		pods  []corev1.Pod
		sorts bool
	}{
		{GetOptions{Namespace: "default", Watch: true, SortBy: ".metadata.name"}, []corev1.Pod{b, a}, true},
		{GetOptions{Namespace: "default", Watch: true, SortBy: ".status.nope"}, []corev1.Pod{b}, false}, // one row: not sorted, so no error
		{GetOptions{Namespace: "default", SortBy: ".status.nope"}, []corev1.Pod{b}, true},
		{GetOptions{Namespace: "default", SortBy: ".status.nope", Output: "json", Names: []string{"b"}}, []corev1.Pod{b}, false},
		{GetOptions{Namespace: "default", SortBy: ".status.nope", Output: "json"}, []corev1.Pod{b}, true},
	} {
		if got := tc.o.sorts(tc.pods); got != tc.sorts {
			t.Errorf("%+v: sorts(%d pods) = %v, want %v", tc.o, len(tc.pods), got, tc.sorts)
		}
	}
	o := GetOptions{Namespace: "default", Watch: true, SortBy: ".metadata.name", NoHeaders: true}
	s, err := printers.NewPodSorter(o.SortBy)
	if err != nil {
		t.Fatal(err)
	}
	pods := []corev1.Pod{b, a}
	if err := s.Sort(pods); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := newPodWatcher(printers.NewLineWriter(&out), o, func(*corev1.Pod) bool { return true }, func() time.Time { return t0 })
	w.initial(pods)
	z := clienttest.SortPod("0-first-by-name", t0, 0, nil)
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
