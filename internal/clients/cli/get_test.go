package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// serve, webPod: see clienttest.
var serve, webPod = clienttest.Serve, clienttest.WebPod

func TestGetPrintsWarningsOnStderr(t *testing.T) {
	since := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	d := &clienttest.FakeDaemon{PodList: []*corev1.Pod{webPod()}, RuntimeStatus: api.RuntimeStatus{Healthy: true}, FileErrs: []api.FileError{
		{File: "/m/fifo.yaml", Error: "fifo.yaml: not a regular file"},
		{File: "/m/open.yaml", Error: "open.yaml: insecure permissions: mode 0666 is group- or world-writable"},
	}}
	sock := serve(t, d)
	d.RuntimeStatus = api.RuntimeStatus{Address: "/run/c.sock", Since: since, Error: "connection refused", LastConfirmed: since.Add(-time.Second)}
	for _, output := range []string{"", "json"} {
		var out, errOut bytes.Buffer
		if err := Get(context.Background(), GetOptions{Namespace: "default", Socket: sock, Output: output}, cmdutil.IOStreams{Out: &out, ErrOut: &errOut}); err != nil {
			t.Fatal(err)
		}
		wantErr := "Warning: containerd at /run/c.sock is unreachable since 2026-11-23T10:00:00Z: connection refused; statuses may be stale\n" +
			"Warning: fifo.yaml: not a regular file\n" +
			"Warning: open.yaml: insecure permissions: mode 0666 is group- or world-writable\n"
		if errOut.String() != wantErr {
			t.Errorf("-o %q stderr:\n%s\nwant\n%s", output, errOut.String(), wantErr)
		}
		switch output {
		case "":
			if !strings.HasPrefix(out.String(), "NAME") || !strings.Contains(out.String(), "web") || strings.Contains(out.String(), "Warning") {
				t.Errorf("table:\n%s", out.String())
			}
		case "json":
			var l corev1.PodList
			if err := json.Unmarshal(out.Bytes(), &l); err != nil || len(l.Items) != 1 {
				t.Errorf("json stdout: %v\n%s", err, out.String())
			}
		}
	}
}

// get warns about the files of the pods it lists, not about files of
// pods in another namespace or not named or selected; a file that
// concerns no pod only with a whole listing.
func TestGetWarnsAboutListedPodsFiles(t *testing.T) {
	other := webPod()
	other.Namespace, other.Name = "infra", "db"
	d := &clienttest.FakeDaemon{PodList: []*corev1.Pod{webPod(), other}, RuntimeStatus: api.RuntimeStatus{Healthy: true}, FileErrs: []api.FileError{
		{File: "/m/web.yaml", Error: "web.yaml: spec.x: Invalid value", Pods: []string{"default/web"}},
		{File: "/m/db.yaml", Error: "db.yaml: duplicate pod infra/db, already defined in x.yaml", Pods: []string{"infra/db"}},
		{File: "/m/fifo.yaml", Error: "fifo.yaml: not a regular file"},
	}}
	sock := serve(t, d)
	for _, tc := range []struct {
		o    GetOptions
		want string
	}{
		{GetOptions{Namespace: "default"}, "Warning: web.yaml: spec.x: Invalid value\nWarning: fifo.yaml: not a regular file\n"},
		{GetOptions{Namespace: "infra"}, "Warning: db.yaml: duplicate pod infra/db, already defined in x.yaml\nWarning: fifo.yaml: not a regular file\n"},
		{GetOptions{Namespace: "infra", Names: []string{"db"}}, "Warning: db.yaml: duplicate pod infra/db, already defined in x.yaml\n"},
		{GetOptions{Namespace: "default", Selector: "app=nope"}, "No resources found in default namespace.\n"},
		{GetOptions{}, "Warning: web.yaml: spec.x: Invalid value\nWarning: db.yaml: duplicate pod infra/db, already defined in x.yaml\nWarning: fifo.yaml: not a regular file\n"},
	} {
		tc.o.Socket = sock
		var errOut bytes.Buffer
		if err := Get(context.Background(), tc.o, cmdutil.IOStreams{Out: io.Discard, ErrOut: &errOut}); err != nil {
			t.Fatal(err)
		}
		if errOut.String() != tc.want {
			t.Errorf("get -n %q %v -l %q: stderr\n%s\nwant\n%s", tc.o.Namespace, tc.o.Names, tc.o.Selector, errOut.String(), tc.want)
		}
	}
}

func TestDescribeShowsLastConfirmed(t *testing.T) {
	confirmed := time.Now().Add(-3 * time.Minute).Truncate(time.Second)
	d := &clienttest.FakeDaemon{PodList: []*corev1.Pod{webPod()}, RuntimeStatus: api.RuntimeStatus{Healthy: true, LastConfirmed: confirmed}}
	sock := serve(t, d)
	var out, errOut bytes.Buffer
	if err := Describe(context.Background(), GetOptions{Socket: sock, Namespace: "default", Names: []string{"web"}}, cmdutil.IOStreams{Out: &out, ErrOut: &errOut}); err != nil {
		t.Fatal(err)
	}
	want := "Last confirmed:  " + confirmed.Format(time.RFC1123Z) + " (3m"
	if !strings.Contains(out.String(), want) || errOut.Len() != 0 {
		t.Fatalf("describe lacks %q (stderr %q):\n%s", want, errOut.String(), out.String())
	}
}

func TestInvalidNamesRejectedBeforeTheDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock") // no daemon: validation comes first
	ctx := context.Background()
	s := cmdutil.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}
	for _, tt := range []struct{ ns, name, want string }{
		{"..", "web", `invalid namespace "..": a lowercase RFC 1123 label must consist of`},
		{"default", "..", `invalid pod name "..": a lowercase RFC 1123 subdomain must consist of`},
		{"a/b", "web", `invalid namespace "a/b"`},
		{"default", "Web", `invalid pod name "Web"`},
	} {
		errs := map[string]error{
			"get":      Get(ctx, GetOptions{Socket: sock, Namespace: tt.ns, Names: []string{tt.name}}, s),
			"describe": Describe(ctx, GetOptions{Socket: sock, Namespace: tt.ns, Names: []string{tt.name}}, s),
			"logs":     Logs(ctx, LogsOptions{Socket: sock, Namespace: tt.ns, Name: tt.name}, s),
		}
		_, errs["exec"] = Exec(ctx, ExecOptions{Socket: sock, Namespace: tt.ns, Name: tt.name, Command: []string{"true"}}, s)
		for cmd, err := range errs {
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s -n %s %s: %v, want one line %q…", cmd, tt.ns, tt.name, err, tt.want)
			}
		}
	}
}

// describe pods without names describes every pod of the namespace the
// selector matches, by name, as kubectl; none: kubectl's line on stderr.
func TestDescribeSelected(t *testing.T) {
	web, db := labelledPod("web", map[string]string{"app": "web"}), labelledPod("db", map[string]string{"app": "db"})
	other := labelledPod("web2", map[string]string{"app": "web"})
	other.Namespace = "infra"
	sock := serve(t, &clienttest.FakeDaemon{PodList: []*corev1.Pod{web, db, other}, RuntimeStatus: api.RuntimeStatus{Healthy: true}})
	for _, tc := range []struct {
		o      GetOptions
		names  []string
		errOut string
	}{
		{o: GetOptions{Namespace: "default"}, names: []string{"db", "web"}},
		{o: GetOptions{Namespace: "default", Selector: "app=web"}, names: []string{"web"}},
		{o: GetOptions{Namespace: "infra", Selector: "app=web"}, names: []string{"web2"}},
		{o: GetOptions{Namespace: "default", Selector: "app=nope"}, errOut: "No resources found in default namespace.\n"},
	} {
		tc.o.Socket = sock
		var out, errOut bytes.Buffer
		if err := Describe(context.Background(), tc.o, cmdutil.IOStreams{Out: &out, ErrOut: &errOut}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range strings.Split(out.String(), "\n") {
			if n, ok := strings.CutPrefix(l, "Name:"); ok {
				names = append(names, strings.TrimSpace(n))
			}
		}
		if !slices.Equal(names, tc.names) || errOut.String() != tc.errOut {
			t.Errorf("describe pods -n %s -l %q: %q, stderr %q; want %q, %q", tc.o.Namespace, tc.o.Selector, names, errOut.String(), tc.names, tc.errOut)
		}
	}
	err := Describe(context.Background(), GetOptions{Socket: sock, Namespace: "default", Selector: "app=web", Names: []string{"web"}}, cmdutil.IOStreams{Out: io.Discard, ErrOut: io.Discard})
	if err == nil || err.Error() != errNameAndSelector.Error() {
		t.Errorf("names and -l: %v", err)
	}
}
