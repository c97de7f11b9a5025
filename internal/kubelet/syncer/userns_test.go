package syncer

import (
	"slices"
	"strings"
	"sync"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

type fakeUserNS struct {
	mu       sync.Mutex
	gets     []types.UID
	released []types.UID
}

func (f *fakeUserNS) Get(pod *corev1.Pod) (records.UserNSRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets = append(f.gets, pod.UID)
	return records.UserNSRecord{UID: pod.UID, HostID: 3 << 16, Size: 1 << 16}, nil
}

func (f *fakeUserNS) Release(uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, uid)
	return nil
}

func userNSPod() *corev1.Pod {
	pod := worldPod(corev1.RestartPolicyAlways, "a")
	no := false
	pod.Spec.HostUsers = &no
	return pod
}

// syncedUserNSWorld: a hostUsers: false pod synced once.
func syncedUserNSWorld(t *testing.T) (*world, *fakeUserNS, *corev1.Pod) {
	t.Helper()
	w := newWorld()
	uns := &fakeUserNS{}
	w.s.userns = uns
	pod := userNSPod()
	if _, err := syncOnce(t, w, pod); err != nil {
		t.Fatal(err)
	}
	return w, uns, pod
}

// A hostUsers: false pod: its range is taken when its sandbox is made,
// recorded on the sandbox, the sandbox pins a user namespace, the
// container's rootfs is remapped to the range and labelled with it; the
// range is released once the deleted pod is cleaned up.
func TestUserNSPodLifecycle(t *testing.T) {
	w, uns, pod := syncedUserNSWorld(t)
	if !slices.Equal(uns.gets, []types.UID{pod.UID}) {
		t.Fatalf("Get calls %v, want one for the pod", uns.gets)
	}
	var sb records.SandboxRecord
	for _, r := range w.host.sandboxes {
		sb = r
	}
	if sb.UserNS == nil || sb.UserNS.HostID != 3<<16 || sb.User != sb.Dir+"/user" {
		t.Fatalf("sandbox record %+v: want the range and the pinned user namespace", sb)
	}
	c := w.rt.pods[pod.UID].Containers[0]
	want := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 3 << 16, Size: 1 << 16}}
	if got := w.rt.userNS[c.ID]; !slices.Equal(got, want) {
		t.Errorf("rootfs mapping %v, want %v", got, want)
	}
	if got := c.Labels[wellknown.LabelUserNS]; got != "196608:65536" {
		t.Errorf("label %s = %q", wellknown.LabelUserNS, got)
	}
	w.obs.desired = false
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(uns.released, []types.UID{pod.UID}) {
		t.Fatalf("released %v, want the deleted pod's range", uns.released)
	}
}

// A finished pod that is still wanted keeps its range.
func TestUserNSKeptWhileDesired(t *testing.T) {
	w, uns, pod := syncedUserNSWorld(t)
	if err := terminateAll(t, w, pod); err != nil {
		t.Fatal(err)
	}
	if len(uns.released) != 0 {
		t.Fatalf("released %v for a pod still wanted", uns.released)
	}
}

// On a host that cannot, the sandbox is refused with the reason, as the
// kubelet refuses it for a runtime without user namespaces.
func TestUserNSUnsupportedRefused(t *testing.T) {
	w := newWorld()
	w.s.userns = &fakeUserNS{}
	w.s.cfg.UserNSUnsupported = "the kernel has no idmapped mounts on ext2"
	pod := userNSPod()
	_, err := syncOnce(t, w, pod)
	if err == nil || !strings.Contains(err.Error(), "spec.hostUsers: false: the kernel has no idmapped mounts on ext2") {
		t.Fatalf("sync error %v", err)
	}
	if !slices.ContainsFunc(w.obs.eventList(), func(e string) bool { return strings.Contains(e, "FailedCreatePodSandBox") }) {
		t.Fatalf("events %v: want FailedCreatePodSandBox", w.obs.eventList())
	}
	if len(w.host.sandboxes) != 0 || w.rt.pods[pod.UID] != nil {
		t.Fatalf("sandboxes %v, containers %v: nothing may be made", w.host.sandboxes, w.rt.pods[pod.UID])
	}
}
