//go:build integration

package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// getPodJSON is `podhost get pods <name> -o json`, decoded.
func (d *podhostd) getPodJSON(name string) *corev1.Pod {
	d.t.Helper()
	var p corev1.Pod
	out := d.mustCLI("get", "pods", name, "-o", "json")
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		d.t.Fatalf("get pods %s -o json: %v\n%s", name, err, out)
	}
	return &p
}

func terminatedMessage(s corev1.ContainerState) string {
	if s.Terminated == nil {
		return "<not terminated>"
	}
	return s.Terminated.Message
}

// TestTerminationMessage: what a container writes to /dev/termination-log
// (with a read-only root filesystem) becomes state.terminated.message, and
// after the restart lastState's; each instance has its own file. With
// FallbackToLogsOnError and nothing written, the tail of the log is the
// message of a failed container.
func TestTerminationMessage(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	// Every run writes "bye-<run>": the counter lives in an emptyDir.
	d.writeManifest("msg.yaml", podManifest("msg", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: main
    image: %s
    securityContext: {readOnlyRootFilesystem: true}
    volumeMounts: [{name: data, mountPath: /data}]
    command: ["sh", "-c", "n=$(( $(cat /data/n 2>/dev/null || echo 0) + 1 )); echo $n > /data/n; printf bye-$n > /dev/termination-log; exit 1"]
`, env.ImageRef)))
	d.writeManifest("once.yaml", podManifest("once", fmt.Sprintf(`  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "echo bye > /dev/termination-log; exit 1"]
`, env.ImageRef)))
	d.writeManifest("fallback.yaml", podManifest("fallback", fmt.Sprintf(`  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "echo first; echo second; echo oops >&2; exit 1"]
`, env.ImageRef)))

	d.waitPod("msg", 60*time.Second, "restarted once with lastState", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil
	})
	p := d.getPodJSON("msg")
	cs := containerStatus(p, "main")
	bye := func(run int32) string { return fmt.Sprintf("bye-%d", run) }
	// The newest instance has run restarts+1 times.
	last := terminatedMessage(cs.LastTerminationState)
	switch {
	case cs.State.Running != nil && last != bye(cs.RestartCount),
		cs.State.Waiting != nil && last != bye(cs.RestartCount+1),
		cs.State.Terminated != nil && (last != bye(cs.RestartCount) || cs.State.Terminated.Message != bye(cs.RestartCount+1)):
		t.Fatalf("restarts %d: state %s (message %q), lastState message %q", cs.RestartCount,
			stateString(cs.State), terminatedMessage(cs.State), last)
	}
	// The file of each instance lives under the pod's state directory.
	files, err := filepath.Glob(filepath.Join(d.stateDir, "pods", string(p.UID), "main.*.termination-log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no termination-log files under the pod dir: %v %v", files, err)
	}

	d.waitPod("once", 30*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	p = d.getPodJSON("once")
	if got := terminatedMessage(containerStatus(p, "main").State); got != "bye\n" {
		t.Fatalf("once: message %q, want %q", got, "bye\n")
	}

	d.waitPod("fallback", 30*time.Second, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	p = d.getPodJSON("fallback")
	// stdout and stderr are two pipes: only the order within one is fixed.
	got := terminatedMessage(containerStatus(p, "main").State)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	stdout := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return l == "oops" })
	if len(lines) != 3 || len(stdout) != 2 || stdout[0] != "first" || stdout[1] != "second" {
		t.Fatalf("fallback message %q, want the log's lines first, second (stdout) and oops (stderr)", got)
	}

	// Deleting the pod removes its termination-log files with its directory.
	uid := string(d.pod("msg").UID)
	d.removeManifest("msg.yaml")
	dir := filepath.Join(d.stateDir, "pods", uid)
	if err := waitFor(30*time.Second, func() (bool, error) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err), nil
	}); err != nil {
		t.Fatalf("pod dir %s left after delete: %v", dir, err)
	}
}
