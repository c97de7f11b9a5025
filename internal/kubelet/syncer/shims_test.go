package syncer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/shimgroup"
	"github.com/podhost/podhost/internal/model/records"
)

func (w *world) sandboxOf(t *testing.T, uid types.UID) records.SandboxRecord {
	t.Helper()
	recs, _ := w.host.PodSandboxes(uid)
	if len(recs) != 1 {
		t.Fatalf("pod %s has %d sandbox records, want 1", uid, len(recs))
	}
	return recs[0]
}

// Sandboxes are packed ShimGroupSize to a shim group, the group is in the
// record (and so in every container's spec), and a removed pod's place is
// taken by the next new one. A group already holding a sandbox from before
// a restart (the daemon adds those from the records) is filled first.
func TestShimGroupsPackPods(t *testing.T) {
	w := newWorld()
	// One sandbox recorded before this syncer started, in group 1.
	w.host.sandboxes["old"] = records.SandboxRecord{ID: "old", PodUID: "uid-old", ShimGroup: shimgroup.Prefix + "1"}
	w.s.shims = shimgroup.New(2)
	w.s.shims.Add("old", shimgroup.Prefix+"1")
	ctx := context.Background()
	pods := make([]*corev1.Pod, 4)
	groups := make([]string, len(pods))
	for i := range pods {
		pods[i] = worldPod(corev1.RestartPolicyAlways, "app")
		pods[i].Name, pods[i].UID = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		if _, err := syncOnce(t, w, pods[i]); err != nil {
			t.Fatal(err)
		}
		sb := w.sandboxOf(t, pods[i].UID)
		groups[i] = sb.ShimGroup
		if got := w.s.specPod(startInput{pod: pods[i], sandbox: sb}).ShimGroup; got != sb.ShimGroup {
			t.Fatalf("pod %d: spec group %q, record %q", i, got, sb.ShimGroup)
		}
	}
	// Pod 0 fills group 1; pods 1 and 2 share a new group, pod 3 opens
	// another: a new group is named after the sandbox that opens it.
	opened := func(i int) string { return shimgroup.Prefix + w.sandboxOf(t, pods[i].UID).ID }
	want := []string{shimgroup.Prefix + "1", opened(1), opened(1), opened(3)}
	for i := range want {
		if groups[i] != want[i] {
			t.Fatalf("groups %q, want %q", groups, want)
		}
	}
	running, _ := w.rt.ListPod(ctx, pods[1].UID)
	if err := w.s.SyncTerminatingPod(ctx, pods[1], running, 5); err != nil {
		t.Fatal(err)
	}
	w.obs.desired = false
	if err := w.s.SyncTerminatedPod(ctx, pods[1]); err != nil {
		t.Fatal(err)
	}
	w.obs.desired = true
	next := worldPod(corev1.RestartPolicyAlways, "app")
	next.Name, next.UID = "web-next", "uid-next"
	if _, err := syncOnce(t, w, next); err != nil {
		t.Fatal(err)
	}
	if got := w.sandboxOf(t, next.UID).ShimGroup; got != groups[1] {
		t.Fatalf("new pod in %q, want %q (the removed pod's place)", got, groups[1])
	}
}

// Without grouping (size 1, and records from before shim groups) the group
// is the sandbox ID: one shim per pod.
func TestShimGroupSizeOneIsTheSandbox(t *testing.T) {
	w := newWorld()
	pod := worldPod(corev1.RestartPolicyAlways, "app")
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	sb := w.sandboxOf(t, pod.UID)
	if sb.ShimGroup != sb.ID || shimGroupOf(records.SandboxRecord{ID: "x"}) != "x" {
		t.Fatalf("group %q for sandbox %q; legacy %q", sb.ShimGroup, sb.ID, shimGroupOf(records.SandboxRecord{ID: "x"}))
	}
}

// A sandbox whose first record write fails takes no place in a shim group:
// the next pod joins the group as if the failed one had never been.
func TestShimGroupFreedWhenRecordFails(t *testing.T) {
	w := newWorld()
	w.s.shims = shimgroup.New(2)
	w.host.fail["put1"] = errors.New("disk full")
	failed := worldPod(corev1.RestartPolicyAlways, "app")
	failed.Name, failed.UID = "web-failed", "uid-failed"
	if _, err := syncOnce(t, w, failed); err == nil {
		t.Fatal("sync with a failing record write succeeded")
	}
	for i := 0; i < 2; i++ {
		pod := worldPod(corev1.RestartPolicyAlways, "app")
		pod.Name, pod.UID = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		if _, err := syncOnce(t, w, pod); err != nil {
			t.Fatal(err)
		}
	}
	a, b := w.sandboxOf(t, "uid-0").ShimGroup, w.sandboxOf(t, "uid-1").ShimGroup
	if a != b {
		t.Fatalf("two pods in groups %q and %q of size 2: the failed sandbox kept a place", a, b)
	}
}
