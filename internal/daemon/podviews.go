package daemon

import (
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/manager"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// statusRevisions is the status manager as the pod views read it.
type statusRevisions interface {
	Revision(uid types.UID) uint64
	StatusRevision(uid types.UID) (corev1.PodStatus, uint64, bool)
}

// podViews builds the API's pod objects and keeps each until its pod
// changes: a watch or a list then costs a copy per changed pod, not per pod
// (a cold start of N pods changes some pod's status O(N) times; rebuilding
// and comparing every pod each time made watching it O(N²)). The objects it
// returns are shared by every caller: read-only.
type podViews struct {
	st   statusRevisions
	node string // this host's name: every pod's spec.nodeName

	mu    sync.Mutex
	views map[types.UID]podView
	// seen is when a build first saw each pod: its creationTimestamp
	// until its status has a startTime (createdAt).
	seen map[types.UID]metav1.Time
	now  func() time.Time
}

// podView is one built pod and what it was built from.
type podView struct {
	src      *corev1.Pod // the manager's object (a new one when the spec changes)
	rev      uint64      // the status revision
	warnings string
	out      *corev1.Pod
}

func newPodViews(st statusRevisions, node string) *podViews {
	return &podViews{st: st, node: node, views: map[types.UID]podView{}, seen: map[types.UID]metav1.Time{}, now: time.Now}
}

// build returns the API objects of entries, in their order.
func (v *podViews) build(entries []manager.PodEntry) []*corev1.Pod {
	v.mu.Lock()
	defer v.mu.Unlock()
	next := make(map[types.UID]podView, len(entries))
	seen := make(map[types.UID]metav1.Time, len(entries))
	out := make([]*corev1.Pod, 0, len(entries))
	for _, e := range entries {
		if t, ok := v.seen[e.Pod.UID]; ok {
			seen[e.Pod.UID] = t
		} else {
			seen[e.Pod.UID] = metav1.NewTime(v.now().Truncate(time.Second))
		}
	}
	v.seen = seen
	for _, e := range entries {
		if e.Status != nil {
			// A waiting pod's computed status is not kept: the same pod
			// object is admitted when it is released, possibly still
			// without a status of its own (revision 0).
			out = append(out, v.decorate(e.Pod, *e.Status, strings.Join(e.Warnings, "; ")))
			continue
		}
		view, ok := v.view(e)
		if !ok {
			continue // a stopping pod that finished since the list: gone
		}
		next[e.Pod.UID] = view
		out = append(out, view.out)
	}
	v.views = next
	return out
}

// view returns e's kept view if nothing it was built from changed, else a
// new one.
// A stopping pod (deletionTimestamp) without a status has finished since
// the manager listed it: false, it is not shown.
func (v *podViews) view(e manager.PodEntry) (podView, bool) {
	warnings := strings.Join(e.Warnings, "; ")
	if old, ok := v.views[e.Pod.UID]; ok && old.src == e.Pod && old.warnings == warnings && old.rev == v.st.Revision(e.Pod.UID) {
		return old, true
	}
	st, rev, ok := v.st.StatusRevision(e.Pod.UID)
	if !ok {
		if e.Pod.DeletionTimestamp != nil {
			return podView{}, false
		}
		st = corev1.PodStatus{Phase: corev1.PodPending}
	}
	return podView{src: e.Pod, rev: rev, warnings: warnings, out: v.decorate(e.Pod, st, warnings)}, true
}

// createdAt is a pod's creationTimestamp: the API server sets it when the
// kubelet's mirror pod is created, as the kubelet acknowledges the pod
// (status.startTime, which survives a restart of podhost); before the pod
// has a status of its own, when podhost first showed it.
func (v *podViews) createdAt(uid types.UID, st corev1.PodStatus) metav1.Time {
	if st.StartTime != nil && !st.StartTime.IsZero() {
		return *st.StartTime
	}
	return v.seen[uid]
}

// decorate copies p with status st and what the API adds to every pod.
func (v *podViews) decorate(p *corev1.Pod, st corev1.PodStatus, warnings string) *corev1.Pod {
	cp := p.DeepCopy()
	cp.Status = st
	cp.APIVersion, cp.Kind = "v1", "Pod"
	cp.CreationTimestamp = v.createdAt(p.UID, st)
	// The kubelet's applyDefaults sets every static pod's nodeName to the
	// node's, whatever the manifest says.
	cp.Spec.NodeName = v.node
	if warnings != "" {
		if cp.Annotations == nil {
			cp.Annotations = map[string]string{}
		}
		cp.Annotations[wellknown.AnnotationWarnings] = warnings
	}
	return cp
}
