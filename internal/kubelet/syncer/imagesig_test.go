package syncer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// An image the image policy refuses: its container waits in
// SignatureValidationFailed (the message is the policy's), a Failed event
// says why, no container is created for it, and the pod's other container
// runs; in the pull back-off the waiting reason is ImagePullBackOff whose
// message keeps the refusal, as the kubelet's.
func TestSyncPodImageSignatureRefused(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "signed", "unsigned")
	pod.Spec.Containers[1].Image = "registry.example.com/unsigned:1"
	refusal := fmt.Errorf("%w: image registry.example.com/unsigned:1@sha256:ab: no signature found; required: a signature by /k.pub", runtimeapi.ErrImageSignature)
	w.rt.imageErr = map[string]error{"registry.example.com/unsigned:1": refusal}
	res, err := syncOnce(t, w, pod)
	if err == nil || res.RequeueAfter < 10*time.Second {
		t.Fatalf("SyncPod = %+v, %v; want the refusal and a back-off", res, err)
	}
	cs := w.rt.pods[pod.UID].Containers
	if len(cs) != 1 || cs[0].Name != "signed" || cs[0].State != "running" {
		t.Fatalf("containers %+v, want only signed, running", cs)
	}
	want := "SignatureValidationFailed: " + refusal.Error()
	if got := waitingReasons(w.obs.last())["unsigned"]; got != want {
		t.Fatalf("waiting %q, want %q", got, want)
	}
	if !slices.Contains(w.obs.eventList(), "Warning Failed "+want) {
		t.Fatalf("events %q", w.obs.eventList())
	}
	w.now = w.now.Add(time.Second)
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	got := waitingReasons(w.obs.last())["unsigned"]
	if !strings.HasPrefix(got, `ImagePullBackOff: Back-off pulling image "registry.example.com/unsigned:1": SignatureValidationFailed: `) {
		t.Fatalf("in the back-off: waiting %q", got)
	}
	if n := len(w.rt.pods[pod.UID].Containers); n != 1 {
		t.Fatalf("%d containers after the back-off sync, want 1", n)
	}
}
