package daemon

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/services/api"
)

func TestRunningContainerID(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name = "web"
	pod.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	pod.Spec.Containers = []corev1.Container{{Name: "main"}, {Name: "side"}, {Name: "new"}}
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", ContainerID: "containerd://i1",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "main", ContainerID: "containerd://m1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "side", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}},
	}
	for _, tc := range []struct {
		container, id, err string
		sentinel           error
	}{
		{container: "main", id: "m1"},
		{container: "", id: "m1"},                                           // kubectl's default: the first app container
		{container: "nope", err: "container nope is not valid for pod web"}, // a bad request (400), as the API server's
		{container: "side", err: "container side is not running (state: waiting: CrashLoopBackOff)", sentinel: api.ErrConflict},
		{container: "init", err: "container init is not running (state: terminated: Completed, exit code 0)", sentinel: api.ErrConflict},
		{container: "new", err: "container new is not running (state: not created)", sentinel: api.ErrConflict},
	} {
		id, err := runningContainerID(pod, tc.container)
		switch {
		case tc.err == "" && (err != nil || id != tc.id):
			t.Errorf("%q: %q, %v; want %q", tc.container, id, err, tc.id)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.container, err, tc.err)
		case tc.sentinel != nil && !errors.Is(err, tc.sentinel):
			t.Errorf("%q: %v does not match %v", tc.container, err, tc.sentinel)
		}
	}
	pod.Spec.Containers = pod.Spec.Containers[:1]
	if id, err := runningContainerID(pod, ""); err != nil || id != "m1" {
		t.Errorf("the only container: %q, %v", id, err)
	}
	pod.Annotations = map[string]string{podview.DefaultContainerAnnotation: "init"}
	if _, err := runningContainerID(pod, ""); err == nil || !strings.HasPrefix(err.Error(), "container init is not running") {
		t.Errorf("the annotation's container: %v", err)
	}
}

// The log a request reads, as the kubelet's validateContainerLogStatus
// picks it; a follow lasts while its attempt runs.
func TestLogAttempt(t *testing.T) {
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
	}
	pod := &corev1.Pod{}
	pod.Name = "web"
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: terminated}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "new", State: waiting("ContainerCreating")},
		{Name: "pull", State: waiting("ImagePullBackOff")},
		{Name: "crashing", RestartCount: 2, State: waiting("CrashLoopBackOff"), LastTerminationState: terminated},
		{Name: "main", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: terminated},
		{Name: "done", RestartCount: 3, State: terminated, LastTerminationState: terminated},
		{Name: "blank"},
	}
	for _, tc := range []struct {
		name     string
		previous bool
		attempt  int
		err      string
	}{
		{name: "new", err: `container "new" in pod "web" is waiting to start: ContainerCreating`},
		{name: "new", previous: true, err: `previous terminated container "new" in pod "web" not found`},
		{name: "pull", err: `container "pull" in pod "web" is waiting to start: trying and failing to pull image`},
		{name: "crashing", attempt: 2},                 // back-off: the run that just ended
		{name: "crashing", previous: true, attempt: 2}, // the same, as the kubelet's LastTerminationState
		{name: "main", attempt: 1},
		{name: "main", previous: true, attempt: 0},
		{name: "done", attempt: 3},
		{name: "done", previous: true, attempt: 2},
		{name: "init"},
		{name: "blank", err: `container "blank" in pod "web" is waiting to start - no logs yet`},
		{name: "unknown", err: `container "unknown" in pod "web" is not available`},
	} {
		attempt, err := logAttempt(pod, tc.name, int(restartsOf(pod, tc.name)), tc.previous)
		if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) || (err == nil && attempt != tc.attempt) {
			t.Errorf("%s previous=%v: %d, %v; want %d, %q", tc.name, tc.previous, attempt, err, tc.attempt, tc.err)
		}
		if errors.Is(err, api.ErrNotFound) {
			t.Errorf("%s: %v is a bad request, not a 404", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name    string
		attempt int
		running bool
	}{
		{"main", 1, true}, {"main", 0, false}, {"crashing", 2, false}, {"init", 0, false},
		{"unknown", 0, true}, // no status yet: unknown, the follow goes on
	} {
		if got := attemptRunning(pod, tc.name, tc.attempt); got != tc.running {
			t.Errorf("%s attempt %d: running = %v, want %v", tc.name, tc.attempt, got, tc.running)
		}
	}
}

func restartsOf(p *corev1.Pod, name string) int32 {
	if cs := podview.ContainerStatus(p, name); cs != nil {
		return cs.RestartCount
	}
	return 0
}

// A file error concerns the pods it keeps, those running from it and those
// it declares again.
func TestFilePods(t *testing.T) {
	dup := &source.Duplicate{Kind: "Pod", Namespace: "infra", Name: "db", File: "/m/b.yaml", Owner: "/m/a.yaml"}
	cm := &source.Duplicate{Kind: "ConfigMap", Namespace: "infra", Name: "cfg", File: "/m/b.yaml", Owner: "/m/a.yaml"}
	fe := source.FileError{File: "/m/b.yaml", Err: errors.Join(errors.New("b.yaml: x"), dup, cm), Kept: []string{"default/web"}}
	if got := filePods(fe, []string{"default/api", "default/web"}); !slices.Equal(got, []string{"default/api", "default/web", "infra/db"}) {
		t.Fatalf("filePods = %q", got)
	}
}

type fakePodEvents []records.PodEvents

func (f fakePodEvents) AllPodEvents() ([]records.PodEvents, error) { return slices.Clone(f), nil }

// The events of deleted pods are listed (by namespace), not those of pods
// still shown (listed from the status manager), nor nameless ones.
func TestDeletedPodEvents(t *testing.T) {
	ev := []records.Event{{Reason: "Failed"}}
	b := &backend{events: fakePodEvents{
		{UID: "live", Namespace: "default", Name: "web", Events: ev},
		{UID: "gone", Namespace: "default", Name: "old", Events: ev},
		{UID: "other", Namespace: "infra", Name: "db", Events: ev},
		{UID: "anon", Events: ev},
	}}
	live := []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{UID: "live"}}}
	var got []string
	for _, pe := range b.deletedPodEvents("default", live) {
		got = append(got, pe.Namespace+"/"+pe.Name)
	}
	if !slices.Equal(got, []string{"default/old"}) {
		t.Fatalf("deleted pods' events of default: %v", got)
	}
	if n := len(b.deletedPodEvents("", live)); n != 2 {
		t.Fatalf("every namespace: %d pods, want 2", n)
	}
}
