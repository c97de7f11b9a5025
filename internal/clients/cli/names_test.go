package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// get and describe take kubectl's TYPE NAME... and TYPE/NAME... forms,
// with the resource builder's errors; one type per command.
func TestResourceArgs(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		resource string
		names    []string
		err      string
	}{
		{args: []string{"pods"}, resource: "pods"},
		{args: []string{"po", "web", "db", "web"}, resource: "pods", names: []string{"web", "db", "web"}},
		{args: []string{"CM", "app"}, resource: "configmaps", names: []string{"app"}},
		{args: []string{"pod/web", "pods/db"}, resource: "pods", names: []string{"web", "db"}},
		{args: []string{"secret/creds"}, resource: "secrets", names: []string{"creds"}},
		{args: []string{"nodes"}, resource: "nodes"},
		{args: []string{"node", "host1"}, resource: "nodes", names: []string{"host1"}},
		{args: []string{"No", "host1", "x"}, resource: "nodes", names: []string{"host1", "x"}},
		{args: []string{"no/host1", "nodes/x"}, resource: "nodes", names: []string{"host1", "x"}},
		{args: []string{"node/host1", "pod/web"}, err: "node/host1 and pod/web: podhost get takes one resource type at a time"},
		{args: []string{"pods", "pod/web"}, err: "there is no need to specify a resource type as a separate argument when passing arguments in resource/name form " +
			"(e.g. 'podhost get resource/<resource_name>' instead of 'podhost get resource resource/<resource_name>')"},
		{args: []string{"pod/web/x"}, err: "arguments in resource/name form may not have more than one slash"},
		{args: []string{"pod/"}, err: "arguments in resource/name form must have a single resource and name"},
		{args: []string{"/web"}, err: "arguments in resource/name form must have a single resource and name"},
		{args: []string{"pod/web", "configmap/app"}, err: "pod/web and configmap/app: podhost get takes one resource type at a time"},
		{args: []string{"cronjobs", "web"}, resource: "cronjobs", names: []string{"web"}},
		{args: []string{"cj/web"}, resource: "cronjobs", names: []string{"web"}},
		{args: []string{"crons", "web"}, err: `the server doesn't have a resource type "crons" (podhost serves pods, nodes, configmaps, secrets, deployments, replicasets, statefulsets, daemonsets, jobs and cronjobs)`},
		{args: []string{"deploy/web"}, resource: "deployments", names: []string{"web"}},
		{args: []string{"sts", "db"}, resource: "statefulsets", names: []string{"db"}},
		{args: nil, err: "you must specify the type of resource to get: pods, nodes, configmaps or secrets"},
	} {
		resource, names, err := ResourceArgs("get", tc.args)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: err %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || resource != tc.resource || !slices.Equal(names, tc.names) {
			t.Errorf("%q: %q %q %v; want %q %q", tc.args, resource, names, err, tc.resource, tc.names)
		}
	}
}

// Names with a label selector or -A are kubectl's resource builder's
// errors (get pods p01 -l app=nomatch reported p01 as NotFound).
func TestCheckNameArgs(t *testing.T) {
	const (
		nameSel = "name cannot be provided when a selector is specified"
		typeSel = "selectors and the all flag cannot be used when passing resource/name arguments"
		allNS   = "a resource cannot be retrieved by name across all namespaces"
	)
	for _, tc := range []struct {
		args     []string
		selector string
		all      bool
		err      string
	}{
		{args: []string{"pods"}, selector: "app=web", all: true},
		{args: []string{"pods", "web"}},
		{args: []string{"pods", "web"}, selector: " "},
		{args: []string{"pods", "web"}, selector: "app=nomatch", err: nameSel},
		{args: []string{"pods", "web", "db"}, selector: "app=web", all: true, err: nameSel},
		{args: []string{"pod/web"}, selector: "app=web", err: typeSel},
		{args: []string{"cm", "app"}, selector: "x", err: nameSel},
		{args: []string{"pods", "web"}, all: true, err: allNS},
		{args: []string{"pod/web", "pod/db"}, all: true, err: allNS},
		{args: []string{"secrets", "creds"}, all: true, err: allNS},
	} {
		err := CheckNameArgs(tc.args, tc.selector, tc.all)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%q -l %q -A=%v: %v, want %q", tc.args, tc.selector, tc.all, err, tc.err)
		}
	}
	// Get itself refuses names with a selector, before asking the daemon.
	err := Get(context.Background(), GetOptions{Namespace: "default", Socket: filepath.Join(t.TempDir(), "none.sock"), Names: []string{"p01"}, Selector: "app=nomatch"},
		cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	if err == nil || err.Error() != nameSel {
		t.Errorf("get pods p01 -l app=nomatch: %v, want %q", err, nameSel)
	}
}

// logs, exec and rollout take NAME or pod/NAME: the resource builder's
// errors for a malformed TYPE/NAME, and only a pod's type.
func TestPodArg(t *testing.T) {
	for _, tc := range []struct{ arg, name, err string }{
		{arg: "web", name: "web"},
		{arg: "pod/web", name: "web"},
		{arg: "pods/web", name: "web"},
		{arg: "PO/web", name: "web"},
		{arg: "pod/", err: "arguments in resource/name form must have a single resource and name"},
		{arg: "/web", err: "arguments in resource/name form must have a single resource and name"},
		{arg: "pods/p01/x", err: "arguments in resource/name form may not have more than one slash"},
		{arg: "deployment/web", err: `the server doesn't have a resource type "deployment" (podhost serves pods)`},
		{arg: "cm/app", err: "cm/app is not a pod: podhost takes NAME or pod/NAME here"},
	} {
		name, err := podArg(tc.arg)
		if name != tc.name || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("podArg(%q) = %q, %v; want %q, %q", tc.arg, name, err, tc.name, tc.err)
		}
	}
	// logs, exec and rollout all parse with it.
	s := cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	noDaemon := filepath.Join(t.TempDir(), "none.sock")
	const want = "arguments in resource/name form must have a single resource and name"
	if err := Logs(context.Background(), LogsOptions{Socket: noDaemon, Namespace: "default", Name: "pod/"}, s); err == nil || err.Error() != want {
		t.Errorf("logs pod/: %v", err)
	}
	if _, err := Exec(context.Background(), ExecOptions{Socket: noDaemon, Namespace: "default", Name: "pod/", Command: []string{"true"}}, s); err == nil || err.Error() != want {
		t.Errorf("exec pod/: %v", err)
	}
	if err := RolloutHistory(context.Background(), RolloutOptions{Socket: noDaemon, Name: "pod/"}, s); err == nil || err.Error() != want {
		t.Errorf("rollout history pod/: %v", err)
	}
}

// An empty name is kubectl's "resource name may not be empty", refused
// before the daemon or the manifest dir is asked (get pods "" printed a
// NotFound for it).
func TestEmptyName(t *testing.T) {
	s := cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
	noDaemon := filepath.Join(t.TempDir(), "none.sock")
	for _, tc := range []struct {
		name string
		run  func(names []string) error
	}{
		{"get", func(n []string) error {
			return Get(context.Background(), GetOptions{Namespace: "default", Socket: noDaemon, Names: n}, s)
		}},
		{"get -o json", func(n []string) error {
			return Get(context.Background(), GetOptions{Namespace: "default", Socket: noDaemon, Names: n, Output: "json"}, s)
		}},
		{"describe", func(n []string) error {
			return Describe(context.Background(), GetOptions{Socket: noDaemon, Namespace: "default", Names: n}, s)
		}},
	} {
		for _, names := range [][]string{{""}, {"web", ""}} {
			if err := tc.run(names); err == nil || err.Error() != "resource name may not be empty" {
				t.Errorf("%s %q: %v, want resource name may not be empty", tc.name, names, err)
			}
		}
	}
}

// objectOrList prints a pod's name before "|", a List's items' after it.
const objectOrList = "jsonpath={.metadata.name}|{range .items[*]}{.metadata.name} {end}"

// get pods with names: the found ones in the order named, in one table or
// List, a cmdutil.NotFoundError per missing one, returned after; one name gives
// one object, and prints nothing when it is missing, as kubectl get.
func TestGetNames(t *testing.T) {
	infra := ipPod("web", "10.0.0.9")
	infra.Namespace = "infra"
	sock := serve(t, &clienttest.FakeDaemon{PodList: []*corev1.Pod{ipPod("web", "10.0.0.1"), ipPod("db", "10.0.0.2"), infra}, RuntimeStatus: api.RuntimeStatus{Healthy: true}})
	const header = "NAME   READY   STATUS    RESTARTS   AGE\n"
	for _, tc := range []struct {
		name, ns, output string
		names            []string
		watch            bool
		out, errOut      string
		missing          []string
	}{
		{name: "table, in the order named", ns: "default", names: []string{"db", "web"},
			out: header + "db     0/1     Running   0          <unknown>\nweb    0/1     Running   0          <unknown>\n"},
		{name: "table, one missing", ns: "default", names: []string{"web", "nope", "db", "gone"},
			out: header + "web    0/1     Running   0          <unknown>\ndb     0/1     Running   0          <unknown>\n", missing: []string{"pods/nope", "pods/gone"}},
		{name: "table, all missing: no No resources found", names: []string{"nope", "gone"}, missing: []string{"pods/nope", "pods/gone"}},
		{name: "one name missing", names: []string{"nope"}, missing: []string{"pods/nope"}},
		{name: "a name twice is printed twice", ns: "default", output: "name", names: []string{"web", "web"}, out: "pod/web\npod/web\n"},
		{name: "name, one missing", ns: "default", output: "name", names: []string{"nope", "db"}, out: "pod/db\n", missing: []string{"pods/nope"}},
		{name: "one name, one object", ns: "default", output: objectOrList, names: []string{"web"}, out: "web|"},
		{name: "several names, a List", ns: "default", output: objectOrList, names: []string{"web", "db"}, out: "|web db "},
		{name: "a List of the found ones", output: objectOrList, names: []string{"db", "nope"}, out: "|db ", missing: []string{"pods/nope"}},
		{name: "watch: nothing printed", ns: "default", names: []string{"web", "nope"}, watch: true, missing: []string{"pods/nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := Get(context.Background(), GetOptions{Socket: sock, Namespace: tc.ns, Names: tc.names, Output: tc.output, Watch: tc.watch},
				cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
			if got := clienttest.NotFoundNames(err); !slices.Equal(got, tc.missing) {
				t.Errorf("err %v: not found %q, want %q", err, got, tc.missing)
			}
			if out.String() != tc.out || errOut.String() != tc.errOut {
				t.Errorf("stdout %q, stderr %q; want %q, %q", out.String(), errOut.String(), tc.out, tc.errOut)
			}
		})
	}
}

// get lists the pods of one namespace, as kubectl's: -n's, "default"
// without it (describe, logs, exec and delete use the same); -A lists
// every namespace with a NAMESPACE column first in the table, wide and the
// watch lines, and leaves custom columns as the user wrote them.
func TestGetNamespaces(t *testing.T) {
	infra := ipPod("web", "10.0.0.9")
	infra.Namespace = "infra"
	sock := serve(t, &clienttest.FakeDaemon{PodList: []*corev1.Pod{ipPod("web", "10.0.0.1"), infra, ipPod("db", "10.0.0.2")}, RuntimeStatus: api.RuntimeStatus{Healthy: true}})
	for _, tc := range []struct {
		ns, output  string
		names       []string
		out, errOut string
	}{
		{ns: "default", out: "NAME   READY   STATUS    RESTARTS   AGE\ndb     0/1     Running   0          <unknown>\nweb    0/1     Running   0          <unknown>\n"},
		{ns: "infra", out: "NAME   READY   STATUS    RESTARTS   AGE\nweb    0/1     Running   0          <unknown>\n"},
		{ns: "empty", errOut: "No resources found in empty namespace.\n"},
		{ns: "default", output: "jsonpath={.status.podIP}", names: []string{"web"}, out: "10.0.0.1"},
		{ns: "infra", output: "jsonpath={.status.podIP}", names: []string{"web"}, out: "10.0.0.9"},
		{ns: "default", output: "name", out: "pod/db\npod/web\n"},
		{out: "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE\n" +
			"default     db     0/1     Running   0          <unknown>\n" +
			"default     web    0/1     Running   0          <unknown>\n" +
			"infra       web    0/1     Running   0          <unknown>\n"},
		{output: "wide", out: "NAMESPACE   NAME   READY   STATUS    RESTARTS   AGE         IP         NODE     SOURCE\n" +
			"default     db     0/1     Running   0          <unknown>   10.0.0.2   <none>   <none>\n" +
			"default     web    0/1     Running   0          <unknown>   10.0.0.1   <none>   <none>\n" +
			"infra       web    0/1     Running   0          <unknown>   10.0.0.9   <none>   <none>\n"},
		{output: "custom-columns=NAME:.metadata.name,IP:.status.podIP", out: "NAME   IP\ndb     10.0.0.2\nweb    10.0.0.1\nweb    10.0.0.9\n"},
	} {
		var out, errOut bytes.Buffer
		err := Get(context.Background(), GetOptions{Socket: sock, Namespace: tc.ns, Names: tc.names, Output: tc.output}, cmdutil.IOStreams{Out: &out, ErrOut: &errOut})
		if err != nil || out.String() != tc.out || errOut.String() != tc.errOut {
			t.Errorf("get pods %q -n %q -o %s: %q, %q, %v; want %q, %q", tc.names, tc.ns, tc.output, out.String(), errOut.String(), err, tc.out, tc.errOut)
		}
	}
}

// get -w with several names, as kubectl: the table of them, then the
// error (nothing is watched); a missing one is its NotFound, nothing
// printed.
func TestGetWatchNames(t *testing.T) {
	sock := serve(t, &clienttest.FakeDaemon{PodList: []*corev1.Pod{ipPod("web", "10.0.0.1"), ipPod("db", "10.0.0.2")}, RuntimeStatus: api.RuntimeStatus{Healthy: true}})
	const watchErr = "you may only watch a single resource or type of resource at a time"
	for _, tc := range []struct {
		names    []string
		out, err string
	}{
		{names: []string{"db", "web"}, out: "NAME   READY   STATUS    RESTARTS   AGE\ndb     0/1     Running   0          <unknown>\nweb    0/1     Running   0          <unknown>\n", err: watchErr},
		{names: []string{"web", "web"}, out: "NAME   READY   STATUS    RESTARTS   AGE\nweb    0/1     Running   0          <unknown>\nweb    0/1     Running   0          <unknown>\n", err: watchErr},
		{names: []string{"web", "nope"}, err: `pods "nope" not found`},
	} {
		var out bytes.Buffer
		err := Get(context.Background(), GetOptions{Socket: sock, Namespace: "default", Names: tc.names, Watch: true}, cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
		if out.String() != tc.out || err == nil || err.Error() != tc.err {
			t.Errorf("get pods %q -w: %q, %v; want %q, %q", tc.names, out.String(), err, tc.out, tc.err)
		}
	}
}

// -o json with several names is a List even when all are missing (kubectl
// prints the empty List, then the errors); one missing name prints nothing.
func TestGetNamesJSON(t *testing.T) {
	sock := serve(t, &clienttest.FakeDaemon{PodList: []*corev1.Pod{webPod()}, RuntimeStatus: api.RuntimeStatus{Healthy: true}})
	for _, tc := range []struct {
		names []string
		want  string // kind and item count; "" = no output
	}{
		{[]string{"web"}, "Pod web"},
		{[]string{"web", "nope"}, "List 1"},
		{[]string{"nope", "gone"}, "List 0"},
		{[]string{"nope"}, ""},
	} {
		var out bytes.Buffer
		err := Get(context.Background(), GetOptions{Namespace: "default", Socket: sock, Names: tc.names, Output: "json"}, cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
		got := ""
		if out.Len() > 0 {
			var v struct {
				Metadata struct{ Name string }
				Items    *[]json.RawMessage
			}
			if jerr := json.Unmarshal(out.Bytes(), &v); jerr != nil {
				t.Fatalf("%q: bad JSON %v:\n%s", tc.names, jerr, out.String())
			}
			got = "Pod " + v.Metadata.Name
			if v.Items != nil {
				got = fmt.Sprint("List ", len(*v.Items))
			}
		}
		if got != tc.want || (err == nil) != (len(tc.names) == 1 && tc.names[0] == "web") {
			t.Errorf("%q: %q, %v; want %q", tc.names, got, err, tc.want)
		}
	}
}

// describe with several names: each pod in the order named, two blank
// lines apart, each with its events unless --show-events=false, as kubectl.
func TestDescribeNames(t *testing.T) {
	sock := serve(t, &clienttest.FakeDaemon{PodList: []*corev1.Pod{webPod(), ipPod("db", "")}, RuntimeStatus: api.RuntimeStatus{Healthy: true}})
	for _, tc := range []struct {
		names      []string
		hideEvents bool
		described  []string // the Name: lines, in order
		events     int      // Events sections
		missing    []string
	}{
		{names: []string{"web"}, described: []string{"web"}, events: 1},
		{names: []string{"web"}, hideEvents: true, described: []string{"web"}},
		{names: []string{"db", "web"}, described: []string{"db", "web"}, events: 2},
		{names: []string{"db", "web"}, hideEvents: true, described: []string{"db", "web"}},
		{names: []string{"web", "nope"}, described: []string{"web"}, events: 1, missing: []string{"pods/nope"}},
		{names: []string{"nope", "gone"}, missing: []string{"pods/nope", "pods/gone"}},
	} {
		var out bytes.Buffer
		err := Describe(context.Background(), GetOptions{Socket: sock, Namespace: "default", Names: tc.names, HideEvents: tc.hideEvents},
			cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
		var described []string
		for _, l := range strings.Split(out.String(), "\n") {
			if name, ok := strings.CutPrefix(l, "Name:"); ok {
				described = append(described, strings.TrimSpace(name))
			}
		}
		if got := clienttest.NotFoundNames(err); !slices.Equal(got, tc.missing) || !slices.Equal(described, tc.described) ||
			strings.Count(out.String(), "\nEvents:") != tc.events {
			t.Errorf("describe %q: described %q, not found %q (%v); want %q, %q, %d Events:\n%s",
				tc.names, described, got, err, tc.described, tc.missing, tc.events, out.String())
		}
		if len(tc.described) == 2 && !strings.Contains(out.String(), "\n\n\nName:") {
			t.Errorf("describe %q: not two blank lines apart:\n%s", tc.names, out.String())
		}
	}
}

// logs and exec take pod/NAME as kubectl; a missing pod is a cmdutil.NotFoundError
// (the daemon's 404 for a missing container is not).
func TestLogsExecPodArg(t *testing.T) {
	d := &logsDaemon{FakeDaemon: &clienttest.FakeDaemon{PodList: []*corev1.Pod{multiPod("web", nil)}}}
	d.write = func(_ context.Context, req api.LogRequest, w io.Writer) error {
		if req.Container != "app" { // a missing pod is the API's NotFound, before the backend
			return apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", req.Container, req.Name))
		}
		_, err := w.Write([]byte("hi\n"))
		return err
	}
	for _, tc := range []struct {
		o        LogsOptions
		out, err string
		missing  bool
	}{
		{o: LogsOptions{Name: "pod/web"}, out: "hi\n"},
		{o: LogsOptions{Name: "po/web", Container: "app"}, out: "hi\n"},
		{o: LogsOptions{Name: "pods/nope"}, err: `pods "nope" not found`, missing: true},
		{o: LogsOptions{Name: "nope", Container: "app"}, err: `pods "nope" not found`, missing: true},
		{o: LogsOptions{Name: "web", Container: "side"}, err: "container side is not valid for pod web"},
		{o: LogsOptions{Name: "deployment/web"}, err: `the server doesn't have a resource type "deployment" (podhost serves pods)`},
	} {
		out, _, err := runLogs(t, d, tc.o)
		var nf *cmdutil.NotFoundError
		if out != tc.out || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || errors.As(err, &nf) != tc.missing {
			t.Errorf("logs %s -c %q: %q, %v; want %q, %q (cmdutil.NotFoundError: %v)", tc.o.Name, tc.o.Container, out, err, tc.out, tc.err, tc.missing)
		}
	}
	_, err := Exec(context.Background(), ExecOptions{Socket: serve(t, &clienttest.FakeDaemon{RuntimeStatus: api.RuntimeStatus{Healthy: true}}), Name: "pod/nope", Namespace: "default", Command: []string{"true"}},
		cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	if nf := (*cmdutil.NotFoundError)(nil); !errors.As(err, &nf) || nf.Name != "nope" {
		t.Errorf("exec pod/nope: %v, want a cmdutil.NotFoundError", err)
	}
}

// An error besides missing names does not lose their NotFoundErrors: get
// --sort-by with a bad field, describe when the runtime status or a pod's
// events cannot be read (the other pods are still described, as kubectl's).
func TestNamesKeepNotFound(t *testing.T) {
	d := &clienttest.FakeDaemon{PodList: []*corev1.Pod{ipPod("a", ""), ipPod("db", ""), webPod()}, RuntimeStatus: api.RuntimeStatus{Healthy: true}}
	sock := serve(t, d)
	noRuntime := proxyFailing(t, sock, "/v1/runtime")
	noEvents := proxyFailing(t, sock, "/api/v1/namespaces/default/events")
	const (
		sortErr   = `--sort-by: couldn't find any field with path "{.bad}" in the list of objects`
		eventsErr = `an error on the server ("unavailable") has prevented the request from succeeding (get events)`
		rtErr     = "500 Internal Server Error: unavailable"
	)
	for _, tc := range []struct {
		name      string
		run       func(cmdutil.IOStreams) error
		errs      []string // err's parts, in order
		described []string
	}{
		{name: "get --sort-by", run: func(s cmdutil.IOStreams) error {
			return Get(context.Background(), GetOptions{Socket: sock, Namespace: "default", Names: []string{"a", "nope", "web"}, SortBy: ".bad"}, s)
		}, errs: []string{sortErr, `pods "nope" not found`}},
		{name: "describe, events unreadable", run: func(s cmdutil.IOStreams) error {
			return Describe(context.Background(), GetOptions{Socket: noEvents, Namespace: "default", Names: []string{"db", "nope"}}, s)
		}, errs: []string{eventsErr, `pods "nope" not found`}},
		{name: "describe, runtime unreadable", run: func(s cmdutil.IOStreams) error {
			return Describe(context.Background(), GetOptions{Socket: noRuntime, Namespace: "default", Names: []string{"web", "nope"}}, s)
		}, errs: []string{rtErr, `pods "nope" not found`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := tc.run(cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
			var parts []string
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					parts = append(parts, e.Error())
				}
			} else if err != nil {
				parts = []string{err.Error()}
			}
			var described []string
			for _, l := range strings.Split(out.String(), "\n") {
				if name, ok := strings.CutPrefix(l, "Name:"); ok {
					described = append(described, strings.TrimSpace(name))
				}
			}
			if !slices.Equal(parts, tc.errs) || !slices.Equal(described, tc.described) {
				t.Errorf("errors %q, described %q; want %q, %q", parts, described, tc.errs, tc.described)
			}
			if len(tc.described) == 1 && strings.HasPrefix(out.String(), "\n") {
				t.Errorf("a separator before the first pod described:\n%s", out.String())
			}
		})
	}
}

// proxyFailing serves the API at sock on a socket of its own, but answers
// path with a 500.
func proxyFailing(t *testing.T, sock, path string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ph-cli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "proxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "podhost" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}},
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path {
			http.Error(w, "unavailable", http.StatusInternalServerError)
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}
