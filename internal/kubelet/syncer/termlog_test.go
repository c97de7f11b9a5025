package syncer

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Each container instance gets its own termination-log file, recorded in
// its labels with the policy; a file that cannot be created does not stop
// the container from starting (the kubelet only logs it).
func TestStartTerminationLog(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		fail     bool
		wantFile bool
	}{
		{name: "default path", path: "/dev/termination-log", wantFile: true},
		{name: "no path", path: ""},
		{name: "create fails", path: "/dev/termination-log", fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			if tt.fail {
				w.host.fail["termlog"] = errors.New("injected")
			}
			pod := worldPod(corev1.RestartPolicyAlways, "a")
			pod.Spec.Containers[0].TerminationMessagePath = tt.path
			pod.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			if _, err := syncOnce(t, w, pod); err != nil {
				t.Fatal(err)
			}
			id := w.idOf(pod.UID, "a")
			c := w.rt.find(id)
			if c == nil || c.State != podstate.StateRunning {
				t.Fatalf("container a not running: %+v", c)
			}
			want, wantPol := "", ""
			if tt.wantFile {
				want, wantPol = "/fake/pods/uid-1/containers/a/"+id, "FallbackToLogsOnError"
			}
			if got := c.Labels[wellknown.LabelTerminationLog]; got != want {
				t.Errorf("termination log label %q, want %q", got, want)
			}
			if got := c.Labels[wellknown.LabelTerminationPolicy]; got != wantPol {
				t.Errorf("policy label %q, want %q", got, wantPol)
			}
		})
	}
}
