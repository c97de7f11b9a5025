package manager

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

const idDoc = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: web
    image: busybox:1.36
`

func decodePod(t *testing.T, doc string) *corev1.Pod {
	t.Helper()
	pods, err := manifest.Decode("web.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return pods[0]
}

func snapOf(pods ...*corev1.Pod) source.Snapshot { return source.Snapshot{Pods: pods} }

// lastUpdate returns the last worker update of uid.
func lastUpdate(w *fakeWorkers, uid types.UID) (podworkers.UpdatePodOptions, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := len(w.updates) - 1; i >= 0; i-- {
		if u := w.updates[i]; u.Pod != nil && u.Pod.UID == uid {
			return u, true
		}
	}
	return podworkers.UpdatePodOptions{}, false
}

// Upgrade: a pod admitted by the previous podhost under its legacy
// (full-hash) UID keeps that UID, through later label edits and restarts;
// an image edit is a new pod and drops the pinned UID.
func TestAdoptLegacyUID(t *testing.T) {
	ctx := context.Background()
	m, w, st, _, _ := newTestManager()
	pod := decodePod(t, idDoc)
	legacy := manifest.LegacyUID(pod)
	if legacy == pod.UID {
		t.Fatal("test pod has no mutable field: legacy UID = identity UID")
	}
	prev := map[types.UID]bool{legacy: true}
	m.applySnapshot(ctx, snapOf(pod), prev)
	if !m.IsDesired(legacy) || m.IsDesired(pod.UID) {
		t.Fatalf("desired: legacy %v, identity UID %v; want the legacy UID adopted", m.IsDesired(legacy), m.IsDesired(pod.UID))
	}
	want := records.IdentityRecord{FullName: "default/web", IdentityHash: manifest.Identity(pod), UID: legacy}
	if got := st.identities["default/web"]; got != want {
		t.Fatalf("record %+v, want %+v", got, want)
	}

	labelled := decodePod(t, strings.Replace(idDoc, "{app: web}", "{app: web, tier: front}", 1))
	m.applySnapshot(ctx, snapOf(labelled), prev)
	u, ok := lastUpdate(w, legacy)
	if !ok || u.Type != podworkers.SyncPodUpdate || u.Pod.Labels["tier"] != "front" || !m.IsDesired(legacy) {
		t.Fatalf("label edit: last update %+v (found %v), want an update of %s with the new label", u, ok, legacy)
	}

	// A restart (same store, new manager): the record keeps the UID although
	// the edited document's legacy UID is another one.
	m2, _, _, _, _ := newTestManager()
	m2.identities = newIdentityRecords(st, m2.log)
	m2.applySnapshot(ctx, snapOf(labelled), map[types.UID]bool{legacy: true})
	if !m2.IsDesired(legacy) {
		t.Fatalf("after a restart the edited pod is not %s", legacy)
	}

	image := decodePod(t, strings.Replace(idDoc, "busybox:1.36", "busybox:1.37", 1))
	m2.applySnapshot(ctx, snapOf(image), nil)
	if m2.IsDesired(legacy) || !m2.IsDesired(image.UID) {
		t.Fatalf("image edit: legacy desired %v, new UID desired %v", m2.IsDesired(legacy), m2.IsDesired(image.UID))
	}
	if _, ok := st.identities["default/web"]; ok {
		t.Fatal("record kept after the pod changed identity")
	}
}

func TestAdoption(t *testing.T) {
	pod := decodePod(t, idDoc)
	legacy := manifest.LegacyUID(pod)
	runtimePod := func(uid types.UID, name, hash string) *podstate.Pod {
		return &podstate.Pod{UID: uid, Name: name, Namespace: "default", Containers: []*podstate.Container{{Name: "web", Hash: hash}}}
	}
	tests := []struct {
		name  string
		prev  map[types.UID]bool
		rpods []*podstate.Pod
		later bool // not the first snapshot
		want  types.UID
	}{
		{name: "nothing known: identity UID", want: pod.UID},
		{name: "legacy admitted", prev: map[types.UID]bool{legacy: true}, want: legacy},
		{name: "legacy runs (no checkpoint)", rpods: []*podstate.Pod{runtimePod(legacy, "web", "other")}, want: legacy},
		{name: "own UID admitted too", prev: map[types.UID]bool{legacy: true, pod.UID: true}, want: pod.UID},
		{name: "own UID runs", prev: map[types.UID]bool{legacy: true}, rpods: []*podstate.Pod{runtimePod(pod.UID, "web", "x")}, want: pod.UID},
		{name: "same document under another scheme", rpods: []*podstate.Pod{runtimePod("u-other", "web", manifest.Hash(pod))}, want: "u-other"},
		{name: "same identity (record lost)", rpods: []*podstate.Pod{{UID: "u-pinned", Name: "web", Namespace: "default",
			Containers: []*podstate.Container{{Name: "web", Hash: "0123456789abcdef", Labels: map[string]string{wellknown.LabelIdentityHash: manifest.Identity(pod)}}}}},
			want: "u-pinned"},
		{name: "other document of the same name", rpods: []*podstate.Pod{runtimePod("u-other", "web", "0123456789abcdef")}, want: pod.UID},
		{name: "same document, other name", rpods: []*podstate.Pod{runtimePod("u-other", "db", manifest.Hash(pod))}, want: pod.UID},
		{name: "not the first snapshot", prev: map[types.UID]bool{legacy: true}, later: true, want: pod.UID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _, st, rt, _ := newTestManager()
			rt.pods = tt.rpods
			if tt.later {
				m.applySnapshot(context.Background(), source.Snapshot{}, nil)
			}
			m.applySnapshot(context.Background(), snapOf(pod), tt.prev)
			if !m.IsDesired(tt.want) {
				t.Fatalf("%s not desired (desired: %v)", tt.want, m.admittedPods())
			}
			_, pinned := st.identities["default/web"]
			if pinned != (tt.want != pod.UID) {
				t.Errorf("record stored %v, want %v", pinned, tt.want != pod.UID)
			}
		})
	}
}

// An explicit metadata.uid is never replaced, and the snapshot's pods are
// not modified (the source keeps them).
func TestExplicitUIDNotAdopted(t *testing.T) {
	pod := decodePod(t, strings.Replace(idDoc, "  name: web\n", "  name: web\n  uid: 6f1c9a7e-0d4b-4f5e-9a39-1c2d3e4f5a6b\n", 1))
	m, _, _, _, _ := newTestManager()
	m.applySnapshot(context.Background(), snapOf(pod), map[types.UID]bool{manifest.LegacyUID(pod): true})
	if !m.IsDesired(pod.UID) {
		t.Fatal("explicit UID not kept")
	}
	adopted := decodePod(t, idDoc)
	uid := adopted.UID
	m2, _, _, _, _ := newTestManager()
	m2.applySnapshot(context.Background(), snapOf(adopted), map[types.UID]bool{manifest.LegacyUID(adopted): true})
	if adopted.UID != uid {
		t.Fatal("resolveIdentities modified the snapshot's pod")
	}
}
