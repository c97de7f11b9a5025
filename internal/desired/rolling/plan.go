// Package rolling rolls a workload's template change out pod by pod, as
// the Deployment, StatefulSet and DaemonSet controllers do on a cluster:
// between the merged sources and the rollout controller, it passes each
// snapshot on with the new revision's pods held back and the old
// revision's pods kept, as far as maxSurge, maxUnavailable and the pods'
// readiness require (Plan is pure; the Controller follows the status
// manager). A workload seen for the first time (also after a podhost
// restart) gets its pods at once; so does a ReplicaSet, whose controller
// never replaces running pods.
package rolling

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// State is what Plan keeps of a workload between calls.
type State struct {
	// Pods were passed on last time (old and new revisions).
	Pods []*corev1.Pod
	// Leaving are old pods taken out whose termination a Recreate waits for.
	Leaving []types.UID
}

// Pods answers Plan's questions about the pods that run.
type Pods interface {
	// ReadyFor is how long the pod has been Ready; false when it is not.
	ReadyFor(uid types.UID) (time.Duration, bool)
	// Gone: the pod has no status any more (terminated and forgotten).
	Gone(uid types.UID) bool
}

// limits are a rollout's bounds: at most replicas+surge pods, at least
// replicas-unavailable of them Ready.
type limits struct {
	surge, unavailable int
	recreate           bool
	minReady           time.Duration // minReadySeconds: Ready that long counts as available
}

// Plan returns the pods of w to pass on now, given what was passed on
// last time (prev).
func Plan(w *manifest.Workload, prev State, pods Pods) State {
	want := w.Pods
	lim, rolls := strategy(w, len(want))
	if !rolls || len(prev.Pods) == 0 && len(prev.Leaving) == 0 {
		return State{Pods: want}
	}
	wanted := map[types.UID]bool{}
	for _, p := range want {
		wanted[p.UID] = true
	}
	rev := ""
	if len(want) > 0 {
		rev = manifest.WorkloadRevision(want[0])
	}
	var cur, old []*corev1.Pod
	for _, p := range prev.Pods {
		switch {
		case wanted[p.UID]:
			cur = append(cur, p)
		case rev != "" && manifest.WorkloadRevision(p) != rev:
			old = append(old, p) // an earlier revision: rolled out below
		}
		// else scaled away (or replicas 0): dropped now
	}
	if len(old) == 0 && (!lim.recreate || allGone(prev.Leaving, pods)) {
		return State{Pods: want}
	}
	if lim.recreate {
		return recreate(want, old, prev.Leaving, pods)
	}
	return roll(want, cur, old, lim, available{pods, lim.minReady})
}

// available is a pod Ready for minReady (a controller's available replica).
type available struct {
	pods     Pods
	minReady time.Duration
}

func (a available) is(uid types.UID) bool {
	d, ok := a.pods.ReadyFor(uid)
	return ok && d >= a.minReady
}

// roll takes old pods out as the Deployment controller scales old
// ReplicaSets down (unavailable ones first, as far as the pods beyond the
// minimum available allow; then available ones down to that minimum; the
// last ones first: a StatefulSet's highest ordinal), then adds new pods,
// in order, while the surge allows and their name is free.
func roll(want, cur, old []*corev1.Pod, lim limits, pods available) State {
	n := len(want)
	minAvail := n - lim.unavailable
	avail, newUnavail := 0, 0
	for _, p := range cur {
		if pods.is(p.UID) {
			avail++
		} else {
			newUnavail++
		}
	}
	for _, p := range old {
		if pods.is(p.UID) {
			avail++
		}
	}
	maxDown := len(cur) + len(old) - minAvail - newUnavail
	slices.Reverse(old)
	out := map[types.UID]bool{}
	for _, p := range old {
		if !pods.is(p.UID) && maxDown > 0 {
			out[p.UID] = true
			maxDown--
		}
	}
	for _, p := range old {
		if pods.is(p.UID) && avail > minAvail {
			out[p.UID] = true
			avail--
		}
	}
	var keep []*corev1.Pod
	held := map[string]bool{}
	for _, p := range old {
		if !out[p.UID] {
			keep = append(keep, p)
			held[p.Name] = true
		}
	}
	in := map[types.UID]bool{}
	for _, p := range cur {
		in[p.UID] = true
	}
	total := len(cur) + len(keep)
	pass := slices.Clone(cur)
	for _, p := range want {
		if in[p.UID] || held[p.Name] {
			continue
		}
		if total >= n+lim.surge {
			break
		}
		pass = append(pass, p)
		total++
	}
	slices.Reverse(keep)
	return State{Pods: append(pass, keep...)}
}

// recreate takes every old pod out and adds the new ones once all have
// terminated (the Deployment controller's Recreate).
func recreate(want, old []*corev1.Pod, leaving []types.UID, pods Pods) State {
	leaving = slices.Clone(leaving)
	for _, p := range old {
		leaving = append(leaving, p.UID)
	}
	if allGone(leaving, pods) {
		return State{Pods: want}
	}
	return State{Leaving: leaving}
}

func allGone(uids []types.UID, pods Pods) bool {
	for _, u := range uids {
		if !pods.Gone(u) {
			return false
		}
	}
	return true
}

// strategy resolves a workload's update strategy against n replicas as
// its controller does (maxSurge rounded up, maxUnavailable down, both 0
// making unavailable 1); rolls is false for a ReplicaSet.
func strategy(w *manifest.Workload, n int) (limits, bool) {
	switch {
	case w.Deployment != nil:
		s := w.Deployment.Spec.Strategy
		if s.Type == appsv1.RecreateDeploymentStrategyType {
			return limits{recreate: true}, true
		}
		var ru appsv1.RollingUpdateDeployment
		if s.RollingUpdate != nil {
			ru = *s.RollingUpdate
		}
		return withMinReady(fenceposts(ru.MaxSurge, ru.MaxUnavailable, "25%", "25%", n), w.Deployment.Spec.MinReadySeconds), true
	case w.StatefulSet != nil:
		var unavail *intstr.IntOrString
		if ru := w.StatefulSet.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			unavail = ru.MaxUnavailable
		}
		return withMinReady(fenceposts(nil, unavail, "0", "1", n), w.StatefulSet.Spec.MinReadySeconds), true
	case w.DaemonSet != nil:
		var surge, unavail *intstr.IntOrString
		if ru := w.DaemonSet.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			surge, unavail = ru.MaxSurge, ru.MaxUnavailable
		}
		return withMinReady(fenceposts(surge, unavail, "0", "1", n), w.DaemonSet.Spec.MinReadySeconds), true
	}
	return limits{}, false
}

func withMinReady(l limits, seconds int32) limits {
	l.minReady = time.Duration(seconds) * time.Second
	return l
}

func fenceposts(surge, unavail *intstr.IntOrString, defSurge, defUnavail string, n int) limits {
	val := func(v *intstr.IntOrString, def string, up bool) int {
		x := intstr.Parse(def)
		if v != nil {
			x = *v
		}
		r, err := intstr.GetScaledValueFromIntOrPercent(&x, n, up)
		if err != nil || r < 0 {
			return 0
		}
		return r
	}
	lim := limits{surge: val(surge, defSurge, true), unavailable: val(unavail, defUnavail, false)}
	if lim.surge == 0 && lim.unavailable == 0 {
		lim.unavailable = 1
	}
	return lim
}
