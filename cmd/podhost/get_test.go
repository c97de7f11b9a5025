package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// servePods runs the API servers over pods and a Ready node named host1,
// and returns their socket.
func servePods(t *testing.T, pods ...*corev1.Pod) string {
	t.Helper()
	n := &corev1.Node{}
	n.Name, n.Status.NodeInfo.KubeletVersion = "host1", "v0.3.0"
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return clienttest.Serve(t, &clienttest.FakeDaemon{PodList: pods, NodeObject: n, RuntimeStatus: api.RuntimeStatus{Healthy: true}})
}

func namedPod(name string, labels map[string]string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.Name, p.Labels = "default", name, labels
	p.Spec.Containers = []corev1.Container{{Name: "c", Image: "img"}}
	p.Status.Phase = corev1.PodRunning
	return p
}

// The printer flags reach get pods: -L repeated and comma-separated,
// --show-labels, --no-headers, --sort-by; all but --no-headers are refused
// for ConfigMaps and Secrets, --show-labels with an output other than the table, and a bad
// --sort-by in one line.
func TestGetPrinterFlags(t *testing.T) {
	e := newTestEnv(t)
	sock := servePods(t, namedPod("web", map[string]string{"app": "web", "tier": "front", "env": "prod"}), namedPod("db", nil))
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{args: []string{"get", "pods", "web", "-L", "app,tier", "-L", "env", "--no-headers"},
			stdout: "web   0/1   Running   0   <unknown>   web   front   prod\n"},
		{args: []string{"get", "pods", "--label-columns=app", "--show-labels"}, stdout: "" +
			"NAME   READY   STATUS    RESTARTS   AGE         APP   LABELS\n" +
			"db     0/1     Running   0          <unknown>         <none>\n" +
			"web    0/1     Running   0          <unknown>   web   app=web,env=prod,tier=front\n"},
		{args: []string{"get", "pods", "-o", "name", "-L", "app", "--no-headers"}, stdout: "pod/db\npod/web\n"},
		{args: []string{"get", "pods", "-o", "yaml", "--show-labels"}, code: 1,
			stderr: "Error: --show-labels option cannot be used with yaml printer\n"},
		{args: []string{"get", "configmaps", "--show-labels"}, code: 1,
			stderr: "Error: --show-labels: podhost supports it for pods, not configmaps\n"},
		{args: []string{"get", "secrets", "-L", "app"}, code: 1,
			stderr: "Error: --label-columns: podhost supports it for pods, not secrets\n"},
		{args: []string{"get", "cm", "--no-headers"}, stderr: "No resources found in default namespace.\n"},
		{args: []string{"get", "cm", "-A"}, stderr: "No resources found\n"},
		{args: []string{"get", "secret", "--sort-by=.metadata.name"}, code: 1,
			stderr: "Error: --sort-by: podhost supports it for pods, not secrets\n"},
		{args: []string{"get", "pods", "-o", "name", "--sort-by", "{.metadata.name}"}, stdout: "pod/db\npod/web\n"},
		{args: []string{"get", "pods", "-o", "name", "--sort-by", "{.metadata.labels.app}"}, stdout: "pod/db\npod/web\n"},
		{args: []string{"get", "pods", "--sort-by", "{.metadata.name"}, code: 1,
			stderr: "Error: --sort-by \"{.metadata.name\": unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'\n"},
		{args: []string{"get", "pods", "--sort-by", ".metadata.nope"}, code: 1,
			stderr: "Error: --sort-by: couldn't find any field with path \"{.metadata.nope}\" in the list of objects\n"},
		{args: []string{"get", "pods", "--sort-by", ".metadata.creationTimestamp"}, code: 1,
			stderr: "Error: --sort-by: couldn't find any field with path \"{.metadata.creationTimestamp}\" in the list of objects\n"},
	} {
		code, stdout, stderr := e.podhost(t, "", append([]string{"--socket", sock}, tc.args...)...)
		if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("podhost %s: code %d, stdout %q, stderr %q; want %d, %q, %q",
				strings.Join(tc.args, " "), code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}

// get and describe with several names or TYPE/NAME print what they found
// and kubectl's line per missing name on stderr, exit code 1.
func TestNamesAsKubectl(t *testing.T) {
	e := newTestEnv(t)
	sock := servePods(t, namedPod("web", nil), namedPod("db", nil))
	const notFound = "Error from server (NotFound): "
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{args: []string{"get", "pods", "web", "nope", "db"}, code: 1,
			stdout: "NAME   READY   STATUS    RESTARTS   AGE\nweb    0/1     Running   0          <unknown>\ndb     0/1     Running   0          <unknown>\n",
			stderr: notFound + "pods \"nope\" not found\n"},
		{args: []string{"get", "pod/db", "po/nope", "pods/web", "-o", "name"}, code: 1, stdout: "pod/db\npod/web\n", stderr: notFound + "pods \"nope\" not found\n"},
		{args: []string{"get", "pods", "nope", "gone"}, code: 1, stderr: notFound + "pods \"nope\" not found\n" + notFound + "pods \"gone\" not found\n"},
		{args: []string{"get", "pod/web", "-o", "jsonpath={.metadata.name}"}, stdout: "web"},
		{args: []string{"get", "pods", "pod/web"}, code: 1, stderr: "Error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form " +
			"(e.g. 'podhost get resource/<resource_name>' instead of 'podhost get resource resource/<resource_name>')\n"},
		{args: []string{"get", "configmaps", "nope"}, code: 1, stderr: notFound + "configmaps \"nope\" not found\n"},
		{args: []string{"get", "pods", ""}, code: 1, stderr: "Error: resource name may not be empty\n"},
		{args: []string{"get", "pods", "web", "-l", "app=nomatch"}, code: 1, stderr: "Error: name cannot be provided when a selector is specified\n"},
		{args: []string{"get", "pod/web", "-l", "app=web"}, code: 1, stderr: "Error: selectors and the all flag cannot be used when passing resource/name arguments\n"},
		{args: []string{"get", "pods", "web", "-A"}, code: 1, stderr: "Error: a resource cannot be retrieved by name across all namespaces\n"},
		{args: []string{"get", "cm/app", "-A"}, code: 1, stderr: "Error: a resource cannot be retrieved by name across all namespaces\n"},
		{args: []string{"get", "pods", "-A", "-o", "name"}, stdout: "pod/db\npod/web\n"},
		{args: []string{"get", "pods", "web", "nope", "--sort-by=.bad"}, code: 1,
			stderr: "Error: --sort-by: couldn't find any field with path \"{.bad}\" in the list of objects\n" + notFound + "pods \"nope\" not found\n"},
		{args: []string{"get", "pods", "db", "web", "-w"}, code: 1,
			stdout: "NAME   READY   STATUS    RESTARTS   AGE\ndb     0/1     Running   0          <unknown>\nweb    0/1     Running   0          <unknown>\n",
			stderr: "Error: you may only watch a single resource or type of resource at a time\n"},
		{args: []string{"logs", "pod/"}, code: 1, stderr: "Error: arguments in resource/name form must have a single resource and name\n"},
		{args: []string{"exec", "pods/web/x", "--", "true"}, code: 1, stderr: "Error: arguments in resource/name form may not have more than one slash\n"},
		{args: []string{"rollout", "undo", "secret/web"}, code: 1, stderr: "Error: secret/web is not a pod: podhost takes NAME or pod/NAME here\n"},
		{args: []string{"describe", "pods", "web", ""}, code: 1, stderr: "Error: resource name may not be empty\n"},
		{args: []string{"describe", "pod", "nope"}, code: 1, stderr: notFound + "pods \"nope\" not found\n"},
		{args: []string{"describe", "cm"}, code: 1, stderr: "Error: describe cm needs a NAME: podhost describes named configmaps only ('podhost get configmaps' lists them)\n"},
		{args: []string{"describe", "cm", "-l", "app=web"}, code: 1, stderr: "Error: -l: podhost selects pods by label, not configmaps\n"},
		{args: []string{"describe", "secret/a", "secret/b"}, code: 1, stderr: notFound + "secrets \"a\" not found\n" + notFound + "secrets \"b\" not found\n"},
		// Nodes are cluster-scoped: -A and -n are ignored with names.
		{args: []string{"get", "nodes", "host1", "nope", "-A"}, code: 1,
			stdout: "NAME    STATUS   ROLES    AGE         VERSION\nhost1   Ready    <none>   <unknown>   v0.3.0\n", stderr: notFound + "nodes \"nope\" not found\n"},
		{args: []string{"get", "no/host1", "-n", "kube-system", "-o", "name"}, stdout: "node/host1\n"},
		{args: []string{"get", "node", "-w"}, code: 1, stderr: "Error: --watch: podhost watches pods, not nodes\n"},
		{args: []string{"describe", "node/nope"}, code: 1, stderr: notFound + "nodes \"nope\" not found\n"},
	} {
		code, stdout, stderr := e.podhost(t, "", append([]string{"--socket", sock}, tc.args...)...)
		if code != tc.code || stdout != tc.stdout || stderr != tc.stderr {
			t.Errorf("podhost %s: code %d, stdout %q, stderr %q; want %d, %q, %q",
				strings.Join(tc.args, " "), code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	code, stdout, stderr := e.podhost(t, "", "--socket", sock, "describe", "pod/db", "pod/nope", "pod/web")
	if code != 1 || strings.Count(stdout, "\nContainers:") != 2 || strings.Count(stdout, "\nEvents:") != 2 || stderr != notFound+"pods \"nope\" not found\n" {
		t.Errorf("describe of three pods: code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	if code, stdout, stderr := e.podhost(t, "", "--socket", sock, "describe", "nodes"); code != 0 || !strings.HasPrefix(stdout, "Name:               host1\n") ||
		!strings.Contains(stdout, "\nNon-terminated Pods:          (2 in total)\n") || stderr != "" {
		t.Errorf("describe nodes: code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	if _, stdout, _ := e.podhost(t, "", "--socket", sock, "describe", "pods", "db", "web", "--show-events=false"); strings.Contains(stdout, "Events:") {
		t.Errorf("describe --show-events=false of two pods:\n%s", stdout)
	}
	// The help says the default once, and it is what describe does.
	if _, stdout, _ := e.podhost(t, "", "describe", "--help"); !strings.Contains(stdout, "show each described pod's events, as kubectl (--show-events=false: none) (default true)\n") {
		t.Errorf("describe --help:\n%s", stdout)
	}
}

// The help of the commands that take a pod names pod/NAME too.
func TestPodArgUsage(t *testing.T) {
	e := newTestEnv(t)
	for _, tc := range []struct {
		args []string
		use  string
	}{
		{[]string{"logs", "--help"}, "podhost logs NAME|pod/NAME|-l SELECTOR [flags]"},
		{[]string{"exec", "--help"}, "podhost exec NAME|pod/NAME -- COMMAND [ARG...] [flags]"},
		{[]string{"rollout", "history", "--help"}, "podhost rollout history NAME|pod/NAME [flags]"},
		{[]string{"rollout", "undo", "--help"}, "podhost rollout undo NAME|pod/NAME [flags]"},
	} {
		if code, stdout, _ := e.podhost(t, "", tc.args...); code != 0 || !strings.Contains(stdout, "Usage:\n  "+tc.use+"\n") {
			t.Errorf("podhost %s: code %d, no %q in:\n%s", strings.Join(tc.args, " "), code, tc.use, stdout)
		}
	}
}

// Each error errors.Join joined prints on its own, a NotFoundError in
// kubectl's words; other errors line by line after "Error: ".
func TestErrorLines(t *testing.T) {
	nf := func(name string) error { return &cmdutil.NotFoundError{Resource: "pods", Name: name} }
	a, b := errors.New("a"), errors.New("b")
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{nf("web"), []string{`Error from server (NotFound): pods "web" not found`}},
		{errors.Join(nf("x"), errors.New("two\nlines"), nf("y")), []string{`Error from server (NotFound): pods "x" not found`,
			"Error: two", "Error: lines", `Error from server (NotFound): pods "y" not found`}},
		{errors.Join(errors.Join(nf("x"), a), b), []string{`Error from server (NotFound): pods "x" not found`, "Error: a", "Error: b"}},
		{fmt.Errorf("%w: %w", a, b), []string{"Error: a: b"}},
		{fmt.Errorf("delete: %w", nf("x")), []string{`Error: delete: pods "x" not found`}},
	} {
		if got := errorLines(tc.err); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.err, got, tc.want)
		}
	}
}
