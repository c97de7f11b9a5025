package cli

import (
	"bytes"
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/services/api"
)

// labelledPod is webPod named name with labels (no start time: AGE is
// <unknown>, so tables do not depend on the clock).
func labelledPod(name string, labels map[string]string) *corev1.Pod {
	p := webPod()
	p.Name, p.Labels = name, labels
	return p
}

// --show-labels, -L and --no-headers as kubectl's table printer: label
// columns after the others (wide ones included), LABELS last; -L ignored
// and --no-headers meaningless for json/yaml/name, --no-headers honoured by
// custom-columns.
func TestGetLabelColumnsAndNoHeaders(t *testing.T) {
	sock := serve(t, &clienttest.FakeDaemon{RuntimeStatus: api.RuntimeStatus{Healthy: true}, PodList: []*corev1.Pod{
		labelledPod("web", map[string]string{"tier": "front", "app.kubernetes.io/name": "shop", "app": "web"}),
		labelledPod("db", nil),
	}})
	for _, tc := range []struct {
		name string
		o    GetOptions
		want string
	}{
		{"show-labels", GetOptions{Namespace: "default", ShowLabels: true}, "" +
			"NAME   READY   STATUS    RESTARTS   AGE         LABELS\n" +
			"db     0/1     Running   0          <unknown>   <none>\n" +
			"web    0/1     Running   0          <unknown>   app.kubernetes.io/name=shop,app=web,tier=front\n"},
		{"label columns", GetOptions{Namespace: "default", LabelColumns: []string{"app.kubernetes.io/name", "tier"}}, "" +
			"NAME   READY   STATUS    RESTARTS   AGE         NAME   TIER\n" +
			"db     0/1     Running   0          <unknown>          \n" +
			"web    0/1     Running   0          <unknown>   shop   front\n"},
		{"wide, label columns and labels", GetOptions{Namespace: "default", Output: "wide", LabelColumns: []string{"app"}, ShowLabels: true}, "" +
			"NAME   READY   STATUS    RESTARTS   AGE         IP       NODE     SOURCE   APP   LABELS\n" +
			"db     0/1     Running   0          <unknown>   <none>   <none>   <none>         <none>\n" +
			"web    0/1     Running   0          <unknown>   <none>   <none>   <none>   web   app.kubernetes.io/name=shop,app=web,tier=front\n"},
		{"no headers", GetOptions{Namespace: "default", NoHeaders: true, LabelColumns: []string{"app"}}, "" +
			"db    0/1   Running   0   <unknown>   \n" +
			"web   0/1   Running   0   <unknown>   web\n"},
		{"no headers, custom columns", GetOptions{Namespace: "default", NoHeaders: true, Output: "custom-columns=NAME:.metadata.name,APP:.metadata.labels.app"}, "" +
			"db    <none>\n" +
			"web   web\n"},
		{"label columns ignored by name", GetOptions{Namespace: "default", Output: "name", LabelColumns: []string{"app"}, NoHeaders: true}, "pod/db\npod/web\n"},
		{"label columns ignored by jsonpath", GetOptions{Namespace: "default", Output: `jsonpath={range .items[*]}{.metadata.name}{" "}{end}`, LabelColumns: []string{"app"}}, "db web "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Socket = sock
			var out, errOut bytes.Buffer
			if err := Get(context.Background(), tc.o, cmdutil.IOStreams{Out: &out, ErrOut: &errOut}); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("output:\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}

// kubectl refuses --show-labels with an output that is not the table.
func TestGetShowLabelsNeedsTheTable(t *testing.T) {
	sock := serve(t, &clienttest.FakeDaemon{RuntimeStatus: api.RuntimeStatus{Healthy: true}, PodList: []*corev1.Pod{webPod()}})
	for _, output := range []string{"json", "yaml", "name", "jsonpath={.items}", "custom-columns=NAME:.metadata.name"} {
		err := Get(context.Background(), GetOptions{Namespace: "default", Socket: sock, Output: output, ShowLabels: true}, cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
		want := "--show-labels option cannot be used with " + output + " printer"
		if err == nil || err.Error() != want {
			t.Errorf("-o %s --show-labels: %v, want %q", output, err, want)
		}
	}
}

// The watch prints the same columns as the table: the label columns too,
// so a label change prints a line; --no-headers drops the header line.
func TestPodWatcherLabelColumns(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	web := phasePod("u1", "web", corev1.PodRunning, start)
	web.Labels = map[string]string{"app": "web"}
	for _, tc := range []struct {
		name string
		o    GetOptions
		want string
	}{
		{"show labels and -L", GetOptions{Namespace: "default", ShowLabels: true, LabelColumns: []string{"example.com/app"}}, "" +
			"NAME   READY   STATUS    RESTARTS   AGE   APP   LABELS\n" +
			"web    0/1     Running   0          10s         app=web\n" +
			"web    0/1     Running   0          10s   shop   app=web,example.com/app=shop\n"},
		{"no headers, wide", GetOptions{Namespace: "default", NoHeaders: true, Output: "wide", LabelColumns: []string{"example.com/app"}}, "" +
			"web   0/1   Running   0   10s   <none>   <none>   <none>\n" +
			"web   0/1   Running   0   10s   <none>   <none>   <none>   shop\n"},
		{"no label columns: a label change prints nothing", GetOptions{Namespace: "default"}, "" +
			"NAME   READY   STATUS    RESTARTS   AGE\n" +
			"web    0/1     Running   0          10s\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newPodWatcher(printers.NewLineWriter(&out), tc.o, func(*corev1.Pod) bool { return true }, func() time.Time { return start.Add(10 * time.Second) })
			w.initial([]corev1.Pod{web})
			relabelled := *web.DeepCopy()
			relabelled.Labels["example.com/app"] = "shop"
			w.event(api.WatchEvent{Type: api.WatchModified, Object: relabelled})
			if out.String() != tc.want {
				t.Errorf("watch output:\n%s\nwant\n%s", out.String(), tc.want)
			}
		})
	}
}
