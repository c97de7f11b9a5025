package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// fakeNode is a Backend with fixed pods; err: the daemon does not answer.
type fakeNode struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	ready   bool
	err     error
	refused map[string]string // Refusals
	events  []*corev1.Event   // what WatchEvents hands out
}

func (f *fakeNode) Node(context.Context) (*corev1.Node, error) {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, nil
}

func (f *fakeNode) Pods(context.Context) ([]*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods, f.err
}

func (f *fakeNode) Refusals(context.Context) (map[string]string, error) { return f.refused, f.err }

func (f *fakeNode) SetDeletionGrace(context.Context, string, string, int64) error { return nil }

func (f *fakeNode) SourcesReady(context.Context) bool           { return f.ready && f.err == nil }
func (f *fakeNode) Changed(ctx context.Context) <-chan struct{} { return ctx.Done() }
func (f *fakeNode) WatchEvents(ctx context.Context, handle func(*corev1.Event)) {
	for _, ev := range f.events {
		handle(ev)
	}
	<-ctx.Done()
}

func localPod(name, hash string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "local-" + types.UID(name),
		Annotations: map[string]string{wellknown.AnnotationConfigHash: hash, wellknown.AnnotationConfigSource: "/etc/podhost/manifests/x.yaml"}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5"}}
}

// newTestMirrors: mirrors over a fake clientset holding objs, its lister
// synced.
func newTestMirrors(t *testing.T, b Backend, objs ...*corev1.Pod) (*mirrors, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	for _, o := range objs {
		if err := client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	a := New(client, b, Options{NodeName: "n1", Logger: slog.New(slog.DiscardHandler)})
	a.setNodeUID("node-uid")
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Core().V1().Pods()
	lister := inf.Lister()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		t.Fatal("informer not synced")
	}
	return newMirrors(a, lister), client
}

func apiPods(t *testing.T, client *fake.Clientset) map[string]*corev1.Pod {
	t.Helper()
	l, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*corev1.Pod{}
	for i := range l.Items {
		out[l.Items[i].Name] = &l.Items[i]
	}
	return out
}

func TestMirrorCreatedWithAnnotationOwnerAndStatus(t *testing.T) {
	b := &fakeNode{pods: []*corev1.Pod{localPod("web", "h1")}, ready: true}
	m, client := newTestMirrors(t, b)
	m.reconcile(context.Background())
	got := apiPods(t, client)["web"]
	if got == nil {
		t.Fatal("no mirror pod")
	}
	if got.Annotations[AnnotationMirror] != "h1" || got.Annotations[AnnotationConfigSource] != "file" || got.Spec.NodeName != "n1" {
		t.Errorf("mirror pod annotations %v, nodeName %q", got.Annotations, got.Spec.NodeName)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "node-uid" || !*got.OwnerReferences[0].Controller {
		t.Errorf("owner references %+v", got.OwnerReferences)
	}
	if got.UID == "local-web" {
		t.Error("the mirror pod carries the local pod's UID")
	}
	// The status is patched on the mirror pod (status subresource).
	var patched bool
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			patched = true
		}
	}
	if !patched {
		t.Errorf("no status patch; actions %v", client.Actions())
	}
}

func TestMirrorOutdatedRecreatedOrphanDeletedOthersKept(t *testing.T) {
	old := mirrorPod(localPod("web", "h0"), "n1", "node-uid", "h0")
	old.UID = "mirror-old"
	orphan := mirrorPod(localPod("gone", "h9"), "n1", "node-uid", "h9")
	orphan.UID = "mirror-gone"
	regular := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "default", UID: "api-uid"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	clash := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "clash", Namespace: "default", UID: "clash-uid"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	b := &fakeNode{pods: []*corev1.Pod{localPod("web", "h1"), localPod("clash", "h2")}}
	m, client := newTestMirrors(t, b, old, orphan, regular, clash)

	m.reconcile(context.Background()) // sources not ready: nothing deleted as an orphan
	got := apiPods(t, client)
	if got["gone"] == nil {
		t.Error("an orphan was deleted before the sources were ready")
	}
	if w := got["web"]; w == nil || w.Annotations[AnnotationMirror] != "h1" {
		t.Errorf("outdated mirror pod not replaced: %+v", w)
	}
	if c := got["clash"]; c == nil || c.UID != "clash-uid" {
		t.Error("a pod that is not a mirror pod was replaced")
	}

	b.ready = true
	waitLister(t, m, "web", "h1")
	m.reconcile(context.Background())
	got = apiPods(t, client)
	if got["gone"] != nil {
		t.Error("the orphan mirror pod was not deleted")
	}
	if got["api"] == nil {
		t.Error("a pod that is not a mirror pod was deleted")
	}
}

// waitLister waits until the informer saw name's mirror with hash.
func waitLister(t *testing.T, m *mirrors, name, hash string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p, err := m.lister.Pods("default").Get(name); err == nil && p.Annotations[AnnotationMirror] == hash {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("informer never saw %s with hash %s", name, hash)
}

func TestMirrorBeingDeletedIsReplaced(t *testing.T) {
	now := metav1.Now()
	deleting := mirrorPod(localPod("web", "h1"), "n1", "node-uid", "h1")
	deleting.UID, deleting.DeletionTimestamp = "mirror-1", &now
	b := &fakeNode{pods: []*corev1.Pod{localPod("web", "h1")}, ready: true}
	m, client := newTestMirrors(t, b, deleting)
	m.reconcile(context.Background())
	w := apiPods(t, client)["web"]
	if w == nil || w.UID == "mirror-1" || w.DeletionTimestamp != nil {
		t.Errorf("mirror pod being deleted not replaced: %+v", w)
	}
}

func TestMirrorNotCreatedForStoppingPod(t *testing.T) {
	now := metav1.Now()
	p := localPod("web", "h1")
	p.DeletionTimestamp = &now
	m, client := newTestMirrors(t, &fakeNode{pods: []*corev1.Pod{p}, ready: true})
	m.reconcile(context.Background())
	if len(apiPods(t, client)) != 0 {
		t.Error("a mirror pod was created for a stopping pod")
	}
}

func TestPodStatusPatchUnchangedAndUID(t *testing.T) {
	st := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", StartTime: &metav1.Time{Time: time.Unix(100, 5)}}
	same := st.DeepCopy()
	same.StartTime = &metav1.Time{Time: time.Unix(100, 999)} // the API keeps seconds
	if _, unchanged, err := podStatusPatch("u1", st, *same); err != nil || !unchanged {
		t.Errorf("same status at the API's precision: unchanged %v, err %v", unchanged, err)
	}
	next := st.DeepCopy()
	next.PodIP = "10.0.0.2"
	patch, unchanged, err := podStatusPatch("u1", st, *next)
	if err != nil || unchanged {
		t.Fatalf("changed status: unchanged %v, err %v", unchanged, err)
	}
	if want := `{"metadata":{"uid":"u1"},"status":{"podIP":"10.0.0.2"}}`; string(patch) != want {
		t.Errorf("patch %s, want %s", patch, want)
	}
}

func TestConfigSource(t *testing.T) {
	for in, want := range map[string]string{"/etc/podhost/manifests/a.yaml": "file", "https://h/x": "http", "http://h/x": "http", "oci://r/x:1": "http", "": "file"} {
		if got := configSource(in); got != want {
			t.Errorf("configSource(%q) = %q, want %q", in, got, want)
		}
	}
}

// A mirror pod the informer has not shown yet (created by an earlier
// pass): AlreadyExists with the same hash is that mirror pod, not an error.
func TestMirrorCreateAlreadyExistsSameHash(t *testing.T) {
	b := &fakeNode{pods: []*corev1.Pod{localPod("web", "h1")}, ready: true}
	m, client := newTestMirrors(t, b)
	existing := mirrorPod(localPod("web", "h1"), "n1", "node-uid", "h1")
	existing.UID = "mirror-1"
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), existing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := m.create(context.Background(), localPod("web", "h1"), "h1")
	if err != nil || got.UID != "mirror-1" {
		t.Errorf("create over the same mirror pod: %v, %v", got, err)
	}
	if _, err := m.create(context.Background(), localPod("web", "h2"), "h2"); err == nil {
		t.Error("create over a mirror pod of another hash succeeded")
	}
}

// TestMirrorsKeptWhileTheDaemonDoesNotAnswer: a daemon that does not
// answer is not a node without pods: no mirror pod is deleted.
func TestMirrorsKeptWhileTheDaemonDoesNotAnswer(t *testing.T) {
	mirror := mirrorPod(localPod("web", "h1"), "n1", "node-uid", "h1")
	mirror.UID = "mirror-1"
	b := &fakeNode{ready: true, err: errors.New("dial unix /run/podhost/podhost.sock: connection refused")}
	m, client := newTestMirrors(t, b, mirror)
	m.reconcile(context.Background())
	if w := apiPods(t, client)["web"]; w == nil || w.UID != "mirror-1" {
		t.Errorf("mirror pod while the daemon is down: %+v", w)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("the cluster was written while the daemon is down: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
