// Package rollout keeps the last versions of each pod and rolls back an
// update that never gets Ready (podhost.io/rollback-after or the daemon's
// rollbackAfter): the newest version of a pod is terminated and the previous
// one brought back, until the manifest changes again.
//
// The Controller sits between the manifest sources and the manager: it sees
// every snapshot, records a new revision when a pod's UID changes, and passes
// the snapshot on with the pods it overrides replaced by their earlier
// revision (same document, so the same UID). The manager therefore needs no
// hook of its own: a rollback is a snapshot in which the failed version is
// gone and the previous one is back. Histories live in bbolt
// (records.RolloutRecord): a restart during a window continues it, and a
// rolled-back pod stays rolled back.
package rollout

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Revision outcomes (records.Revision.Outcome).
const (
	OutcomePending    = "Pending"    // not Ready yet
	OutcomeReady      = "Ready"      // was Ready (or Succeeded) once: a version to come back to
	OutcomeRolledBack = "RolledBack" // not Ready within its window: replaced by an earlier revision
	OutcomeSuperseded = "Superseded" // replaced by a newer version before it was Ready
	OutcomeUndone     = "Undone"     // replaced by rollout undo
)

// Verdict is what Decide says about a pod's newest version.
type Verdict int

const (
	Wait     Verdict = iota // not Ready; its window (if any) is still open
	Ready                   // Ready: the window closes, the version is good
	RollBack                // not Ready within its window
)

func (v Verdict) String() string {
	return [...]string{"Wait", "Ready", "RollBack"}[v]
}

// Check is what Decide knows about a pod's newest version.
type Check struct {
	Window      time.Duration     // 0: no rollback
	Seen        time.Time         // when the version first appeared (window start)
	Now         time.Time         // now
	HasPrevious bool              // an earlier revision was Ready: something to come back to
	Status      *corev1.PodStatus // nil: no status computed yet
}

// Decision is Decide's answer.
type Decision struct {
	Verdict Verdict
	Reason  string        // RollBack: why (a container's waiting reason, ...)
	Message string        // RollBack: for the event
	After   time.Duration // Wait with a window: time left in it
}

// MaxMinReady caps how long a watched version must stay Ready to count.
const MaxMinReady = 10 * time.Second

// Decide is the pure rollback decision for the newest version of one pod.
// A version watched for rollback (a window and a previous version) counts as
// Ready once Ready for min(window/2, MaxMinReady) without a break (as
// kubectl's minReadySeconds): a crash-looping container without a readiness
// probe is Ready for an instant after each start. Succeeded counts at once.
func Decide(c Check) Decision {
	watched := c.Window > 0 && c.HasPrevious
	left := c.Seen.Add(c.Window).Sub(c.Now)
	if c.Status != nil && c.Status.Phase == corev1.PodSucceeded {
		return Decision{Verdict: Ready}
	}
	if since, ok := readySince(c.Status); ok {
		stable := since.Add(min(c.Window/2, MaxMinReady)).Sub(c.Now)
		if !watched || stable <= 0 {
			return Decision{Verdict: Ready}
		}
		return Decision{Verdict: Wait, After: stable} // past the window too: a break now rolls back
	}
	if !watched {
		return Decision{Verdict: Wait}
	}
	if left > 0 {
		return Decision{Verdict: Wait, After: left}
	}
	reason, detail := whyNotReady(c.Status)
	return Decision{Verdict: RollBack, Reason: reason,
		Message: fmt.Sprintf("not Ready within %s (%s)", c.Window, detail)}
}

// readySince is when the pod turned Ready, if it is.
func readySince(st *corev1.PodStatus) (time.Time, bool) {
	if st == nil {
		return time.Time{}, false
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time, c.Status == corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// whyNotReady names the most telling reason a pod is not Ready: a
// container's waiting reason (ImagePullBackOff, CrashLoopBackOff,
// CreateContainerConfigError, ...), its last termination, a rejection of the
// pod, else the Ready condition's.
func whyNotReady(st *corev1.PodStatus) (reason, detail string) {
	if st == nil {
		return "NotReady", "no status yet"
	}
	all := append(append([]corev1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...)
	for _, cs := range all {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return w.Reason, withMessage("container "+cs.Name+": "+w.Reason, w.Message)
		}
	}
	for _, cs := range all {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return orDefault(t.Reason, "Error"), fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
		}
	}
	if st.Reason != "" {
		return st.Reason, withMessage(st.Reason, st.Message)
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodReady && c.Reason != "" {
			return c.Reason, withMessage(c.Reason, c.Message)
		}
	}
	return "NotReady", "pod not Ready"
}

func withMessage(s, msg string) string {
	if msg == "" {
		return s
	}
	return s + ": " + msg
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
