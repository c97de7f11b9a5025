package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// graceNode records the deletion graces the daemon is given, and whether
// the pod's file was still there when it was.
type graceNode struct {
	fakeNode
	dir    string
	graces []string
}

func (g *graceNode) SetDeletionGrace(_ context.Context, ns, name string, secs int64) error {
	g.graces = append(g.graces, fmt.Sprintf("%s/%s %ds file:%v", ns, name, secs, fileExists(filepath.Join(g.dir, ns+"_"+name+".yaml"))))
	return nil
}

func apiPod(name string) *corev1.Pod {
	ref := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "api-uid"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i",
			Env: []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("s1"), Key: "k"}}}}}},
			Volumes: []corev1.Volume{
				{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cm1")}}},
				{Name: "gone", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("absent")}}}}}}
}

func TestReferences(t *testing.T) {
	ref := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	p := apiPod("web")
	p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{ref("pull")}
	p.Spec.InitContainers = []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("cm2")}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("s1")}}}}}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("cm1")}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: ref("s2")}}}}}})
	cms, secrets := references(p)
	if want := []string{"cm1", "absent", "cm2"}; !slices.Equal(cms, want) {
		t.Errorf("configmaps %v, want %v", cms, want)
	}
	if want := []string{"pull", "s2", "s1"}; !slices.Equal(secrets, want) {
		t.Errorf("secrets %v, want %v", secrets, want)
	}
}

// TestAPIPodHandedOverThenStopped: the cluster's pod is written with the
// objects it references that exist (0600) and no mirror pod is made for
// it; its status is patched from the daemon's pod; deleted with a grace,
// the daemon gets the grace before the file goes, and the API's pod is
// deleted once the daemon's is gone; a file no pod wants is removed.
func TestAPIPodHandedOverThenStopped(t *testing.T) {
	dir := t.TempDir()
	b := &graceNode{dir: dir}
	b.ready = true
	m, client := newTestMirrors(t, b, apiPod("web"))
	m.a.opts.ClusterDir = dir
	for _, o := range []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm1", Namespace: "default"}, Data: map[string]string{"a": "1"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: "default"}, Data: map[string][]byte{"k": []byte("v")}},
	} {
		if err := client.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, "default_stale.yaml"), []byte("x"), 0o600)
	ctx := context.Background()
	m.reconcile(ctx)
	file := filepath.Join(dir, "default_web.yaml")
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the pod's file: %v %v", err, fi)
	}
	data, _ := os.ReadFile(file)
	for _, want := range []string{"kind: ConfigMap", "name: cm1", "kind: Secret", "k: dg==", "kind: Pod", "uid: api-uid"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the pod's file has no %q:\n%s", want, data)
		}
	}
	if strings.Count(string(data), "kind: ConfigMap") != 2 { // cm1 and the service variables
		t.Errorf("a missing ConfigMap was written:\n%s", data)
	}
	if fileExists(filepath.Join(dir, "default_stale.yaml")) {
		t.Error("a file no pod wants was kept")
	}
	if got := apiPods(t, client)["web"]; got == nil || got.UID != "api-uid" || got.Annotations[AnnotationMirror] != "" {
		t.Errorf("the API's pod after a reconcile: %+v", got)
	}

	// The daemon runs it: its status goes to the API's pod.
	local := apiPod("web")
	local.Annotations = map[string]string{wellknown.AnnotationConfigSource: file}
	local.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.9"}
	b.pods = []*corev1.Pod{local}
	m.reconcile(ctx)
	if got := apiPods(t, client)["web"]; got.Status.Phase != corev1.PodRunning || got.Status.PodIP != "10.0.0.9" {
		t.Errorf("the API's pod status: %+v", got.Status)
	}

	// Deleted with a grace of 3 s.
	now, three := metav1.Now(), int64(3)
	deleting := apiPods(t, client)["web"].DeepCopy()
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, &three
	if err := client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), deleting, "default"); err != nil {
		t.Fatal(err)
	}
	waitListerDeleting(t, m, "web")
	m.reconcile(ctx)
	if want := []string{"default/web 3s file:true"}; !slices.Equal(b.graces, want) || fileExists(file) {
		t.Errorf("graces %v (want %v), file there: %v", b.graces, want, fileExists(file))
	}
	if apiPods(t, client)["web"] == nil {
		t.Error("the API's pod was deleted while the daemon's still ran")
	}
	b.pods = nil // stopped
	m.reconcile(ctx)
	if apiPods(t, client)["web"] != nil {
		t.Error("the API's pod was not deleted once the daemon's was gone")
	}
}

// waitListerDeleting waits until the informer saw name's deletion.
func waitListerDeleting(t *testing.T, m *mirrors, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p, err := m.lister.Pods("default").Get(name); err == nil && p.DeletionTimestamp != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("informer never saw %s deleted", name)
}

// TestAPIPodRefusedIsFailed: a pod the daemon refuses is Failed in the
// API with the daemon's reason.
func TestAPIPodRefusedIsFailed(t *testing.T) {
	dir := t.TempDir()
	b := &fakeNode{ready: true, refused: map[string]string{filepath.Join(dir, "default_web.yaml"): "default_web.yaml: pod default/web: violates PodSecurity \"baseline:latest\": privileged"}}
	m, client := newTestMirrors(t, b, apiPod("web"))
	m.a.opts.ClusterDir = dir
	m.reconcile(context.Background())
	st := apiPods(t, client)["web"].Status
	if st.Phase != corev1.PodFailed || st.Reason != ReasonRefused || !strings.Contains(st.Message, "violates PodSecurity") {
		t.Errorf("status of a refused pod: %+v", st)
	}
}

// TestAPIPodNameCannotLeaveClusterDir: a pod whose name would make its file
// a path outside ClusterDir (a hostile or broken API server) is not
// written, and no file elsewhere is touched or removed.
func TestAPIPodNameCannotLeaveClusterDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "cluster")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(root, "config.yaml")
	if err := os.WriteFile(victim, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &graceNode{dir: dir}
	b.ready = true
	evil := apiPod("/../../config")
	evil.Namespace = "x"
	m, _ := newTestMirrors(t, b, evil)
	m.a.opts.ClusterDir = dir
	m.reconcile(context.Background())
	if data, err := os.ReadFile(victim); err != nil || string(data) != "mine" {
		t.Fatalf("a file outside the cluster dir was changed: %q %v", data, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the cluster dir has %v", entries)
	}
}
