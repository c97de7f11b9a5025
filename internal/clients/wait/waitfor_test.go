package wait

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/clients/clienttest"
	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

func waitPod(ns, name, uid string, phase corev1.PodPhase, ready corev1.ConditionStatus, lbls map[string]string) api.WatchEvent {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), Labels: lbls},
		Status: corev1.PodStatus{Phase: phase, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}}}
	return api.WatchEvent{Type: api.WatchAdded, Object: p}
}

func typed(t string, e api.WatchEvent) api.WatchEvent { e.Type = t; return e }

func deletingPod(e api.WatchEvent) api.WatchEvent {
	e.Object = *e.Object.DeepCopy()
	now := metav1.Now()
	e.Object.DeletionTimestamp = &now
	return e
}

var bookmark = api.WatchEvent{Type: api.WatchBookmark}

// Each case feeds watch events to a wait and checks what it printed and
// how the last event ended it (nil: still waiting).
func TestPodWait(t *testing.T) {
	webPending := waitPod("default", "web", "u1", corev1.PodPending, corev1.ConditionFalse, map[string]string{"app": "web"})
	webReady := waitPod("default", "web", "u1", corev1.PodRunning, corev1.ConditionTrue, map[string]string{"app": "web"})
	dbReady := waitPod("default", "db", "u2", corev1.PodRunning, corev1.ConditionTrue, map[string]string{"app": "db"})
	otherNS := waitPod("infra", "web", "u3", corev1.PodRunning, corev1.ConditionTrue, map[string]string{"app": "web"})
	webNew := waitPod("default", "web", "u4", corev1.PodPending, corev1.ConditionFalse, nil)
	for _, tc := range []struct {
		name   string
		o      ForOptions
		events []api.WatchEvent
		out    string
		end    string // "done", "" (waiting) or the error's text
	}{
		{"ready later", ForOptions{Names: []string{"web"}, For: "condition=Ready"},
			[]api.WatchEvent{webPending, bookmark, typed(api.WatchModified, webReady)}, "pod/web condition met\n", "done"},
		{"not yet", ForOptions{Names: []string{"web"}, For: "condition=Ready"},
			[]api.WatchEvent{webPending, otherNS, bookmark}, "", ""},
		{"ready=false, case-insensitive", ForOptions{Names: []string{"web"}, For: "condition=ready=FALSE"},
			[]api.WatchEvent{webPending, bookmark}, "pod/web condition met\n", "done"},
		{"in the order named", ForOptions{Names: []string{"web", "db"}, For: "condition=Ready"},
			[]api.WatchEvent{webPending, dbReady, bookmark}, "", ""},
		{"in the order named, both", ForOptions{Names: []string{"web", "db"}, For: "condition=Ready"},
			[]api.WatchEvent{webPending, dbReady, bookmark, typed(api.WatchModified, webReady)}, "pod/web condition met\npod/db condition met\n", "done"},
		{"missing name", ForOptions{Names: []string{"web", "nope"}, For: "condition=Ready"},
			[]api.WatchEvent{webReady, bookmark}, "", `pods "nope" not found`},
		{"pod in another namespace only", ForOptions{Names: []string{"web"}, For: "condition=Ready"},
			[]api.WatchEvent{otherNS, bookmark}, "", `pods "web" not found`},
		{"selector", ForOptions{Selector: "app=web", AllNamespaces: true, For: "condition=Ready"},
			[]api.WatchEvent{webReady, dbReady, otherNS, bookmark}, "pod/web condition met\npod/web condition met\n", "done"},
		{"selector matches nothing", ForOptions{Selector: "app=nope", For: "condition=Ready"},
			[]api.WatchEvent{webReady, bookmark}, "", "no matching resources found"},
		{"all of the namespace", ForOptions{All: true, For: "jsonpath={.status.phase}=Running"},
			[]api.WatchEvent{webReady, dbReady, otherNS, bookmark}, "pod/db condition met\npod/web condition met\n", "done"},
		{"delete", ForOptions{Names: []string{"web"}, For: "delete"},
			[]api.WatchEvent{webReady, bookmark, typed(api.WatchDeleted, webReady)}, "pod/web condition met\n", "done"},
		{"delete: replaced by a new pod of the name", ForOptions{Names: []string{"web"}, For: "delete"},
			[]api.WatchEvent{webReady, bookmark, webNew}, "pod/web condition met\n", "done"},
		{"delete of a missing pod", ForOptions{Names: []string{"web"}, For: "delete"},
			[]api.WatchEvent{dbReady, bookmark}, "", "done"},
		{"delete: still stopping", ForOptions{Names: []string{"web"}, For: "delete"},
			[]api.WatchEvent{webReady, bookmark, typed(api.WatchModified, deletingPod(webReady))}, "", ""},
		{"delete: applied again with the same UID", ForOptions{Names: []string{"web"}, For: "delete"},
			[]api.WatchEvent{webReady, bookmark, typed(api.WatchModified, deletingPod(webReady)), typed(api.WatchModified, webReady)}, "pod/web condition met\n", "done"},
		{"delete: an older pod of the name still stopping", ForOptions{Names: []string{"web"}, For: "delete"},
			// One diff: the pods now (ADDED) before the gone (DELETED).
			[]api.WatchEvent{webNew, bookmark, deletingPod(webReady), typed(api.WatchDeleted, webNew)}, "", ""},
		{"delete: timeout 0", ForOptions{Names: []string{"web"}, For: "delete"},
			[]api.WatchEvent{webReady, bookmark}, "", "timed out waiting for the condition on pods/web"},
		{"create", ForOptions{Names: []string{"web"}, For: "create"},
			[]api.WatchEvent{dbReady, bookmark, webPending}, "pod/web condition met\n", "done"},
		{"condition: gone and back", ForOptions{Names: []string{"web"}, For: "condition=Ready"},
			[]api.WatchEvent{webPending, bookmark, typed(api.WatchDeleted, webPending), typed(api.WatchAdded, webReady)}, "pod/web condition met\n", "done"},
		{"timeout 0: not met", ForOptions{Names: []string{"web"}, For: "condition=Ready"},
			[]api.WatchEvent{webPending, bookmark}, "", "condition not met for pods/web"},
		{"jsonpath filter", ForOptions{Names: []string{"web"}, For: `jsonpath={.status.conditions[?(@.type=="Ready")].status}=True`},
			[]api.WatchEvent{webReady, bookmark}, "pod/web condition met\n", "done"},
		{"jsonpath exists", ForOptions{Names: []string{"web"}, For: "jsonpath=.status.phase"},
			[]api.WatchEvent{webPending, bookmark}, "pod/web condition met\n", "done"},
		{"jsonpath on a list", ForOptions{Names: []string{"web"}, For: "jsonpath={.status.conditions}=x"},
			[]api.WatchEvent{webPending, bookmark}, "", "jsonpath leads to a nested object or list which is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.o.Namespace == "" {
				tc.o.Namespace = "default"
			}
			cond, err := parseWaitFor(tc.o.For)
			if err != nil {
				t.Fatal(err)
			}
			sel, err := labels.Parse(tc.o.Selector)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			w := &podWait{cond: cond, o: tc.o, sel: sel, out: &out, once: strings.Contains(tc.name, "timeout 0"), pods: map[string]*corev1.Pod{}}
			for _, e := range tc.events {
				if err = w.event(e); err != nil {
					break
				}
			}
			end := ""
			switch {
			case errors.Is(err, errWaitDone):
				end = "done"
			case err != nil:
				end = err.Error()
			}
			if out.String() != tc.out || end != tc.end {
				t.Errorf("printed %q, ended %q; want %q, %q", out.String(), end, tc.out, tc.end)
			}
		})
	}
}

func TestParseWaitForErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "--for is required",
		"ready":              `unrecognized condition: "ready"`,
		"condition=":         "a condition name is required",
		"jsonpath=":          "jsonpath expression cannot be empty",
		"jsonpath={.a}=":     "jsonpath wait value cannot be empty",
		"jsonpath={.a[}=x":   "error parsing jsonpath",
		"jsonpath={.a}x":     "unexpected path string",
		"jsonpath=.a.b=x=y":  "", // the value is "x=y"
		"DELETE":             "",
		"condition=Ready=no": "",
	} {
		_, err := parseWaitFor(in)
		switch {
		case want == "" && err != nil:
			t.Errorf("--for=%s: %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("--for=%s: error %v, want %q", in, err, want)
		}
	}
}

func TestWaitForArgs(t *testing.T) {
	for _, tc := range []struct {
		o    ForOptions
		want string
	}{
		{ForOptions{For: "delete"}, "no name was specified"},
		{ForOptions{Names: []string{"web"}, Selector: "app=web", For: "delete"}, "name cannot be provided when a selector is specified"},
		{ForOptions{Names: []string{"web"}, AllNamespaces: true, For: "delete"}, "across all namespaces"},
		{ForOptions{Names: []string{"Web"}, For: "delete"}, "Web"},
		{ForOptions{Names: []string{"web"}, Selector: "a in (", For: "delete"}, "unable to parse the label selector"},
	} {
		err := For(t.Context(), tc.o, cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// lateDaemon has no pods until its manifests are read (ready): its
// Kubernetes API then lists them.
type lateDaemon struct {
	*clienttest.FakeDaemon
	mu     sync.Mutex
	ready  bool
	pods   []*corev1.Pod
	asked  chan struct{} // closed at the first SourcesReady
	closed bool
}

func (d *lateDaemon) Pods() []*corev1.Pod { d.mu.Lock(); defer d.mu.Unlock(); return d.pods }
func (d *lateDaemon) SourcesReady() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		close(d.asked)
	}
	return d.ready
}

func (d *lateDaemon) read(pods ...*corev1.Pod) {
	d.mu.Lock()
	d.ready, d.pods = true, pods
	d.mu.Unlock()
	d.Touch()
}

// wait against the daemon's Kubernetes API: the initial-events-end
// bookmark comes once the daemon read its manifests, so a wait started
// before that (a boot script) decides on the pods they declare, not on the
// empty list before them.
func TestWaitBeforeManifestsAreRead(t *testing.T) {
	d := &lateDaemon{FakeDaemon: &clienttest.FakeDaemon{RuntimeStatus: api.RuntimeStatus{Healthy: true}}, asked: make(chan struct{})}
	sock := clienttest.Serve(t, d)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- For(t.Context(), ForOptions{Socket: sock, Namespace: "default", Names: []string{"web"}, For: "condition=Ready", Timeout: 30 * time.Second},
			cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
	}()
	select {
	case <-d.asked: // the watch waits for the manifests
	case err := <-done:
		t.Fatalf("wait ended before the manifests were read: %v, printed %q", err, out.String())
	}
	p := waitPod("default", "web", "u1", corev1.PodRunning, corev1.ConditionTrue, nil).Object
	d.read(&p)
	if err := <-done; err != nil || out.String() != "pod/web condition met\n" {
		t.Fatalf("wait: %v, printed %q", err, out.String())
	}
}
