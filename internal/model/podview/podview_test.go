package podview

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

func pod(name string, phase corev1.PodPhase, inits int, statuses ...corev1.ContainerStatus) corev1.Pod {
	p := corev1.Pod{}
	p.Name = name
	p.Status.Phase = phase
	for i := 0; i < inits; i++ {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init"})
	}
	for _, s := range statuses {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: s.Name})
	}
	p.Status.ContainerStatuses = statuses
	return p
}

func running(name string, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

func waiting(name, reason string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name, reason string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}}
}

func deleted(p corev1.Pod) corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return p
}

func TestStatus(t *testing.T) {
	initRunning := pod("x", corev1.PodPending, 2, waiting("a", "PodInitializing", 0))
	initRunning.Status.InitContainerStatuses = []corev1.ContainerStatus{terminated("i1", "Completed", 0), running("i2", false)}
	initCrash := pod("x", corev1.PodPending, 1, waiting("a", "PodInitializing", 0))
	initCrash.Status.InitContainerStatuses = []corev1.ContainerStatus{waiting("i1", "CrashLoopBackOff", 3)}
	initSignal := pod("x", corev1.PodPending, 1, waiting("a", "PodInitializing", 0))
	initSignal.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i1",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Signal: 9}}}}
	rejected := pod("x", corev1.PodFailed, 0)
	rejected.Status.Reason = "HostPortConflict"
	tests := []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"running", pod("x", corev1.PodRunning, 0, running("a", true), running("b", true)), "Running"},
		{"crash loop", pod("x", corev1.PodRunning, 0, running("a", true), waiting("b", "CrashLoopBackOff", 4)), "CrashLoopBackOff"},
		{"image pull", pod("x", corev1.PodPending, 0, waiting("a", "ErrImagePull", 0)), "ErrImagePull"},
		{"completed", pod("x", corev1.PodSucceeded, 0, terminated("a", "Completed", 0)), "Completed"},
		{"oom", pod("x", corev1.PodRunning, 0, terminated("a", "OOMKilled", 137)), "OOMKilled"},
		{"exit code", pod("x", corev1.PodFailed, 0, terminated("a", "", 3)), "ExitCode:3"},
		{"completed, another still running, pod ready", withConditions(pod("x", corev1.PodRunning, 0, terminated("a", "Completed", 0), running("b", true)),
			corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady), "Running"},
		{"init progress", initRunning, "Init:1/2"},
		{"init crash", initCrash, "Init:CrashLoopBackOff"},
		{"rejected", rejected, "HostPortConflict"},
		{"init killed by a signal", initSignal, "Init:Signal:9"},
		{"deleted while running", deleted(pod("x", corev1.PodRunning, 0, running("a", true))), "Terminating"},
		{"deleted after it succeeded", deleted(pod("x", corev1.PodSucceeded, 0, terminated("a", "Completed", 0))), "Completed"},
		{"deleted after it failed", deleted(pod("x", corev1.PodFailed, 0, terminated("a", "Error", 1))), "Error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Status(&tt.pod); got != tt.want {
				t.Fatalf("Status = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTableAndDescribe(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := pod("web", corev1.PodRunning, 0, running("a", true), waiting("b", "CrashLoopBackOff", 2))
	p.Namespace = "default"
	p.Status.PodIP = "10.89.0.5"
	p.Status.StartTime = &metav1.Time{Time: now.Add(-90 * time.Second)}
	header, row := Header(true), Row(&p, true, now)
	if want := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "SOURCE"}; !slices.Equal(header, want) {
		t.Fatalf("header %q, want %q", header, want)
	}
	if want := []string{"web", "1/2", "CrashLoopBackOff", "2", "90s", "10.89.0.5", "<none>", "<none>"}; !slices.Equal(row, want) {
		t.Fatalf("row %q, want %q", row, want)
	}
	var buf bytes.Buffer
	evs := []Event{{Time: now.Add(-time.Minute), Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container b"}}
	if err := Describe(&buf, &p, evs, now.Add(-95*time.Second), now); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(buf.String()), " ")
	for _, want := range []string{"Name:", "web", "Containers:", "CrashLoopBackOff", "Restart Count:", "BackOff", "10.89.0.5",
		"Last confirmed: Thu, 01 Jan 2026 11:58:25 +0000 (95s ago)"} {
		if !strings.Contains(text, want) {
			t.Fatalf("describe lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestRolledBackShown(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := pod("web", corev1.PodRunning, 0, running("a", true))
	p.Annotations = map[string]string{wellknown.AnnotationConfigSource: "/etc/podhost/manifests/web.yaml",
		wellknown.AnnotationRolledBackFrom: "0123456789abcdef", wellknown.AnnotationRolledBackReason: "ImagePullBackOff: not Ready within 5s"}
	if want, row := "/etc/podhost/manifests/web.yaml (rolled back from 0123456789abcdef)", Row(&p, true, now); row[len(row)-1] != want {
		t.Fatalf("wide row %q: SOURCE is not %q", row, want)
	}
	var buf bytes.Buffer
	if err := Describe(&buf, &p, nil, time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	if want := "Rolled Back: from 0123456789abcdef: ImagePullBackOff: not Ready within 5s"; !strings.Contains(strings.Join(strings.Fields(buf.String()), " "), want) {
		t.Fatalf("describe lacks %q:\n%s", want, buf.String())
	}
}

// restarted: cs restarted n times, the last one finished at.
func restarted(cs corev1.ContainerStatus, n int32, at time.Time) corev1.ContainerStatus {
	cs.RestartCount = n
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: metav1.Time{Time: at}}
	return cs
}

func started(cs corev1.ContainerStatus, s bool) corev1.ContainerStatus {
	cs.Started = &s
	return cs
}

func withConditions(p corev1.Pod, conds ...corev1.PodConditionType) corev1.Pod {
	for _, c := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		st := corev1.ConditionFalse
		for _, t := range conds {
			if t == c {
				st = corev1.ConditionTrue
			}
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: st})
	}
	return p
}

// sidecarPod: init container proxy (restartPolicy Always) before app
// container app, with the given statuses.
func sidecarPod(phase corev1.PodPhase, proxy, app corev1.ContainerStatus, conds ...corev1.PodConditionType) corev1.Pod {
	p := pod("x", phase, 0, app)
	always := corev1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always}}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{proxy}
	return withConditions(p, conds...)
}

// TestRowAsKubectl: READY, STATUS and RESTARTS as kubectl's printPod prints
// them for the pod object the kubelet would report.
func TestRowAsKubectl(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	sidecarKilled := terminated("proxy", "Error", 137)
	initCrash := pod("x", corev1.PodPending, 1, waiting("a", "PodInitializing", 0))
	initCrash.Status.InitContainerStatuses = []corev1.ContainerStatus{restarted(waiting("init", "CrashLoopBackOff", 0), 3, now.Add(-30*time.Second))}
	initCrash = withConditions(initCrash)
	initDone := pod("x", corev1.PodRunning, 1, started(running("a", true), true))
	initDone.Status.InitContainerStatuses = []corev1.ContainerStatus{restarted(terminated("init", "Completed", 0), 2, now.Add(-time.Hour))}
	initDone = withConditions(initDone, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady)
	tests := []struct {
		name                    string
		pod                     corev1.Pod
		ready, status, restarts string
	}{
		{"sidecar running", sidecarPod(corev1.PodRunning, started(running("proxy", true), true), started(running("app", true), true),
			corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady), "2/2", "Running", "0"},
		{"sidecar not started yet", sidecarPod(corev1.PodPending, started(running("proxy", false), false), waiting("app", "PodInitializing", 0)),
			"0/2", "Init:0/1", "0"},
		{"sidecar stopped after the pod succeeded", sidecarPod(corev1.PodSucceeded, started(sidecarKilled, false), started(terminated("app", "Completed", 0), false),
			corev1.PodInitialized), "0/2", "Completed", "0"},
		{"init container crash looping", initCrash, "0/1", "Init:CrashLoopBackOff", "3 (30s ago)"},
		{"completed, another still running, pod not ready", withConditions(pod("x", corev1.PodRunning, 0, terminated("a", "Completed", 0), running("b", true)),
			corev1.PodInitialized), "1/2", "NotReady", "0"},
		{"init container restarts not counted once initialized", initDone, "1/1", "Running", "0"},
		{"sidecar and app restarts", sidecarPod(corev1.PodRunning, restarted(started(running("proxy", true), true), 2, now.Add(-time.Minute)),
			restarted(started(running("app", true), true), 1, now.Add(-2*time.Minute)), corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady),
			"2/2", "Running", "3 (60s ago)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := Row(&tt.pod, false, now)
			if got := [3]string{row[1], row[2], row[3]}; got != [3]string{tt.ready, tt.status, tt.restarts} {
				t.Fatalf("READY STATUS RESTARTS = %q, want %q", got, [3]string{tt.ready, tt.status, tt.restarts})
			}
		})
	}
}

// describeLines returns describe's output as lines with runs of blanks
// squeezed to one.
func describeLines(t *testing.T, p *corev1.Pod, now time.Time) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := Describe(&buf, p, nil, time.Time{}, now); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(buf.String(), "\n") {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return out
}

// The header as kubectl describePod writes it: Status is the phase (not
// get's STATUS), "Terminating (lasts …)" with the grace period while a
// deleted pod has not finished; Reason and Message follow it; annotations
// are "key: value"; IP is empty without one, IPs lists them or <none>.
func TestDescribeHeaderAsKubectl(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := int64(30)
	for _, tc := range []struct {
		name string
		pod  func() corev1.Pod
		want []string // consecutive lines
		not  []string
	}{
		{name: "crash-looping container: the phase", pod: func() corev1.Pod {
			return pod("web", corev1.PodRunning, 0, waiting("a", "CrashLoopBackOff", 3))
		}, want: []string{"Status: Running", "IP:", "IPs: <none>"}, not: []string{"Status: CrashLoopBackOff"}},
		{name: "deleted, still running", pod: func() corev1.Pod {
			p := deleted(pod("web", corev1.PodRunning, 0, running("a", true)))
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-95 * time.Second)}
			p.DeletionGracePeriodSeconds = &grace
			return p
		}, want: []string{"Status: Terminating (lasts 95s)", "Termination Grace Period: 30s"}},
		{name: "deleted, finished: the phase", pod: func() corev1.Pod {
			p := deleted(pod("web", corev1.PodSucceeded, 0, terminated("a", "Completed", 0)))
			p.DeletionTimestamp = &metav1.Time{Time: now}
			return p
		}, want: []string{"Status: Succeeded"}, not: []string{"Terminating"}},
		{name: "reason and message after the status", pod: func() corev1.Pod {
			p := pod("web", corev1.PodFailed, 0, terminated("a", "Error", 1))
			p.Status.Reason, p.Status.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
			return p
		}, want: []string{"Status: Failed", "Reason: DeadlineExceeded", "Message: Pod was active on the node longer than the specified deadline"}},
		{name: "annotations and IPs", pod: func() corev1.Pod {
			p := pod("web", corev1.PodRunning, 0, running("a", true))
			p.Annotations = map[string]string{"b": "two", "a": "one", corev1.LastAppliedConfigAnnotation: "{}",
				"long": strings.Repeat("x", 150), "multi": "l1\nl2\n"}
			p.Status.PodIP = "10.89.0.5"
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.89.0.5"}, {IP: "fd00::5"}}
			return p
		}, want: []string{"Annotations: a: one", "b: two", "long:", strings.Repeat("x", 138) + "...", "multi:", "l1", "l2",
			"Status: Running", "IP: 10.89.0.5", "IPs:", "IP: 10.89.0.5", "IP: fd00::5"}, not: []string{"last-applied"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod()
			lines := describeLines(t, &p, now)
			text := strings.Join(lines, "\n")
			if !strings.Contains(text, strings.Join(tc.want, "\n")) {
				t.Fatalf("describe lacks the lines %q:\n%s", tc.want, text)
			}
			for _, n := range tc.not {
				if strings.Contains(text, n) {
					t.Fatalf("describe has %q:\n%s", n, text)
				}
			}
		})
	}
}
