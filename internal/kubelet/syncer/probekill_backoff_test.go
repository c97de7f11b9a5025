package syncer

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/kubelet/prober"
	"github.com/podhost/podhost/internal/model/podstate"
)

// Repeated liveness kills, each instance failing its probe 3 s after it
// started: the kubelet's doBackOff checks a restart against the newest
// exited instance of the pod status its sync started with, in which the
// killed instance was still running. So the first restart after a probe
// kill neither waits nor opens a back-off (no exited instance yet), the
// second one opens it (10 s, from the first kill) without waiting, and the
// third is the first to wait: 10 s, then 20 s. Restart counts go 1, 2, 3, 4.
func TestProbeKillBackoffSequence(t *testing.T) {
	w, pod := syncedWorld(t, corev1.RestartPolicyAlways, "a")
	var waits []time.Duration
	var counts []int
	for kill := 1; kill <= 4; kill++ {
		w.now = w.now.Add(3 * time.Second)
		id := w.idOf(pod.UID, "a")
		w.prb.set("a", prober.Unhealthy{ContainerID: id, Reason: prober.ReasonLiveness})
		killedAt := w.now
		for i := 0; ; i++ {
			res, err := syncOnce(t, w, pod)
			if err != nil {
				t.Fatalf("kill %d: %v", kill, err)
			}
			if c := w.rt.pods[pod.UID].Find("a"); c.ID != id && c.State == podstate.StateRunning {
				counts = append(counts, c.RestartCount)
				break
			}
			if res.RequeueAfter <= 0 || i > 10 {
				t.Fatalf("kill %d: not restarted and no back-off to wait for (%+v)", kill, res)
			}
			w.now = w.now.Add(res.RequeueAfter)
		}
		waits = append(waits, w.now.Sub(killedAt).Round(time.Second))
	}
	if want := []time.Duration{0, 0, 10 * time.Second, 20 * time.Second}; !slices.Equal(waits, want) {
		t.Fatalf("restarts after each kill waited %v, want %v", waits, want)
	}
	if want := []int{1, 2, 3, 4}; !slices.Equal(counts, want) {
		t.Fatalf("restart counts %v, want %v", counts, want)
	}
}

// A container that exits by itself is checked against its own exit, as
// before: the first restart is immediate and opens a 10 s window, an exit
// inside it waits it out.
func TestExitBackoffSequence(t *testing.T) {
	w, pod := syncedWorld(t, corev1.RestartPolicyAlways, "a")
	var waits []time.Duration
	for exit := 1; exit <= 3; exit++ {
		w.now = w.now.Add(3 * time.Second)
		id := w.idOf(pod.UID, "a")
		w.rt.exit(id, 1)
		exitedAt := w.now
		for i := 0; ; i++ {
			res, err := syncOnce(t, w, pod)
			if err != nil {
				t.Fatal(err)
			}
			if c := w.rt.pods[pod.UID].Find("a"); c.ID != id && c.State == podstate.StateRunning {
				break
			}
			if res.RequeueAfter <= 0 || i > 10 {
				t.Fatalf("exit %d: not restarted and no back-off (%+v)", exit, res)
			}
			w.now = w.now.Add(res.RequeueAfter)
		}
		waits = append(waits, w.now.Sub(exitedAt).Round(time.Second))
	}
	if want := []time.Duration{0, 10 * time.Second, 20 * time.Second}; !slices.Equal(waits, want) {
		t.Fatalf("restarts after each exit waited %v, want %v", waits, want)
	}
}
