package rollout

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// observe records a snapshot of the sources: a pod whose UID changed gets a
// new revision (and loses any override: the file changed, its new version
// is tried); a pod that is gone loses its history.
func (c *Controller) observe(snap source.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.flushLocked()
	c.last = &snap
	now := c.opts.Now()
	seen := map[string]bool{}
	for _, p := range snap.Pods {
		name := manifest.FullName(p)
		seen[name] = true
		rec := c.recs[name]
		if rec == nil {
			rec = &records.RolloutRecord{FullName: name}
			c.recs[name] = rec
		}
		if c.addRevisionLocked(rec, p, now) {
			c.persistLocked(rec)
		}
	}
	for name := range c.recs {
		if seen[name] {
			continue
		}
		delete(c.recs, name)
		c.dirty[name] = true // deleted by the flush
	}
}

// addRevisionLocked makes p rec's newest revision unless it already is (or
// is the overridden version); it reports whether rec changed.
func (c *Controller) addRevisionLocked(rec *records.RolloutRecord, p *corev1.Pod, now time.Time) bool {
	if rec.Override != nil && rec.Override.SourceUID == p.UID {
		return false // still the version that was rolled back or undone
	}
	n := len(rec.Revisions)
	if n > 0 && rec.Revisions[n-1].UID == p.UID {
		cur := &rec.Revisions[n-1]
		if cur.Hash == manifest.Hash(p) {
			return false
		}
		// Same UID, new document (metadata.uid set, or an in-place edit).
		cur.Hash, cur.Pod = manifest.Hash(p), mustJSON(p)
		delete(c.pods, p.UID)
		return true
	}
	rev := records.Revision{Number: 1, UID: p.UID, Hash: manifest.Hash(p), Source: p.Annotations[wellknown.AnnotationConfigSource],
		Seen: now, Outcome: OutcomePending, Pod: mustJSON(p)}
	for i := range rec.Revisions {
		r := &rec.Revisions[i]
		rev.Number = max(rev.Number, r.Number+1)
		if r.Outcome == OutcomePending {
			r.Outcome = OutcomeSuperseded
			if st, ok := c.st.Status(r.UID); ok && Decide(Check{Status: &st}).Verdict == Ready {
				// Ready by now; the status change and the edit raced.
				r.Outcome, r.Ready = OutcomeReady, true
			}
		}
		if r.UID == p.UID { // back to an earlier document: it moves to the top
			rev.Ready = r.Ready
		}
	}
	rec.Revisions = slices.DeleteFunc(rec.Revisions, func(r records.Revision) bool { return r.UID == p.UID })
	rec.Revisions = trim(append(rec.Revisions, rev), c.opts.MaxRevisions)
	rec.Override = nil
	delete(c.pods, p.UID)
	if n > 0 {
		c.log.Info("pod updated", "pod", rec.FullName, "revision", rev.Number, "hash", rev.Hash, "podUID", string(p.UID),
			"rollbackAfter", c.window(p))
	}
	return true
}

// trim keeps the newest max revisions, and the newest Ready one beyond them.
func trim(revs []records.Revision, max int) []records.Revision {
	if len(revs) <= max {
		return revs
	}
	keep := len(revs) - 1
	for keep >= 0 && !revs[keep].Ready {
		keep--
	}
	out := make([]records.Revision, 0, max+1)
	for i, r := range revs {
		if i >= len(revs)-max || i == keep {
			out = append(out, r)
		}
	}
	return out
}

func mustJSON(p *corev1.Pod) json.RawMessage {
	b, err := json.Marshal(p)
	if err != nil { // a decoded Pod always encodes
		panic(fmt.Sprintf("encode pod %s: %v", manifest.FullName(p), err))
	}
	return b
}

// check decides every pending newest revision: a Ready one becomes good,
// one past its window is rolled back. It reports whether the view changed
// (emit), when the next window ends (0: none) and whether a status change
// could matter (watch).
func (c *Controller) check() (emit bool, next time.Duration, watch bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.flushLocked()
	now := c.opts.Now()
	c.flushEventsLocked()
	for _, rec := range c.recs {
		n := len(rec.Revisions)
		if n == 0 || rec.Override != nil || rec.Revisions[n-1].Outcome != OutcomePending {
			continue
		}
		cur := &rec.Revisions[n-1]
		prev := lastReady(rec.Revisions[:n-1])
		in := Check{Seen: cur.Seen, Now: now, HasPrevious: prev != nil}
		if p := c.podLocked(rec, cur.UID); p != nil {
			in.Window = c.window(p)
		}
		if st, ok := c.st.Status(cur.UID); ok {
			in.Status = &st
		}
		d := Decide(in)
		switch d.Verdict {
		case Ready:
			cur.Outcome, cur.Ready = OutcomeReady, true
			c.persistLocked(rec)
			// Decided: its window is not needed any more, nor its decoded
			// pod (a full copy per pod; decoded again if ever restored).
			delete(c.pods, cur.UID)
		case RollBack:
			c.rollBackLocked(rec, cur, prev, d, now)
			emit = true
		case Wait:
			watch = true
			if d.After > 0 && (next == 0 || d.After < next) {
				next = d.After
			}
		}
	}
	return emit, next, watch || len(c.notify) > 0
}

func lastReady(revs []records.Revision) *records.Revision {
	for i := len(revs) - 1; i >= 0; i-- {
		if revs[i].Ready {
			return &revs[i]
		}
	}
	return nil
}

// rollBackLocked replaces cur by prev until the source changes again.
func (c *Controller) rollBackLocked(rec *records.RolloutRecord, cur, prev *records.Revision, d Decision, now time.Time) {
	cur.Outcome, cur.Reason = OutcomeRolledBack, withMessage(d.Reason, d.Message)
	rec.Override = &records.Override{SourceUID: cur.UID, ToUID: prev.UID, Reason: d.Reason, Message: d.Message, At: now}
	c.persistLocked(rec)
	c.flushLocked() // the override is recorded before the old status goes
	c.forgetStatus(prev.UID)
	c.log.Warn("rolling back pod update", "pod", rec.FullName, "from", fmtRevision(cur), "to", fmtRevision(prev),
		"reason", d.Reason, "message", d.Message)
	c.st.Event(cur.UID, corev1.EventTypeWarning, ReasonRolledBack,
		fmt.Sprintf("%s; rolling back to %s", d.Message, fmtRevision(prev)))
	c.notify = append(c.notify, pendingEvent{uid: prev.UID, typ: corev1.EventTypeWarning, reason: ReasonRolledBack,
		message: fmt.Sprintf("brought back in place of %s: %s: %s (containers start anew)", fmtRevision(cur), d.Reason, d.Message)})
	if c.opts.Metrics != nil {
		c.opts.Metrics.ObserveRollback("auto", d.Reason)
	}
}

// flushEventsLocked records the events of restored pods that are tracked
// now (an event recorded before would go with the pod's old records).
func (c *Controller) flushEventsLocked() {
	c.notify = slices.DeleteFunc(c.notify, func(e pendingEvent) bool {
		if _, ok := c.st.Status(e.uid); !ok {
			return false
		}
		c.st.Event(e.uid, e.typ, e.reason, e.message)
		return true
	})
}

// HistoryEntry is one revision as `podhost rollout history` shows it.
type HistoryEntry struct {
	Revision int
	UID      types.UID
	Hash     string
	Source   string
	Time     time.Time // first seen
	Outcome  string
	Reason   string
	Running  bool // the version that runs now
}

// History returns the revisions of namespace/name, oldest first.
func (c *Controller) History(namespace, name string) ([]HistoryEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec := c.recs[namespace+"/"+name]
	if rec == nil || len(rec.Revisions) == 0 {
		return nil, fmt.Errorf("pod %s/%s: no rollout history: %w", namespace, name, ErrNotFound)
	}
	running := runningUID(rec)
	out := make([]HistoryEntry, 0, len(rec.Revisions))
	for _, r := range rec.Revisions {
		out = append(out, HistoryEntry{Revision: r.Number, UID: r.UID, Hash: r.Hash, Source: r.Source, Time: r.Seen,
			Outcome: r.Outcome, Reason: r.Reason, Running: r.UID == running})
	}
	return out, nil
}

func runningUID(rec *records.RolloutRecord) types.UID {
	if rec.Override != nil {
		return rec.Override.ToUID
	}
	return rec.Revisions[len(rec.Revisions)-1].UID
}

// Undo brings back the revision before the one that runs now (as kubectl
// rollout undo; the nearest earlier one that was Ready, skipping versions
// that never were), until the pod's manifest changes again. It returns that
// revision's number.
func (c *Controller) Undo(namespace, name string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	full := namespace + "/" + name
	rec := c.recs[full]
	if rec == nil || len(rec.Revisions) == 0 {
		return 0, fmt.Errorf("pod %s: no rollout history: %w", full, ErrNotFound)
	}
	running := runningUID(rec)
	i := slices.IndexFunc(rec.Revisions, func(r records.Revision) bool { return r.UID == running })
	if i <= 0 {
		return 0, fmt.Errorf("pod %s: no revision before the running one to go back to", full)
	}
	to, from := lastReady(rec.Revisions[:i]), &rec.Revisions[i]
	if to == nil {
		to = &rec.Revisions[i-1]
	}
	if c.podLocked(rec, to.UID) == nil {
		return 0, fmt.Errorf("pod %s: %s cannot be brought back (stored document does not decode)", full, fmtRevision(to))
	}
	source := rec.Revisions[len(rec.Revisions)-1]
	if from.UID == source.UID && from.Outcome == OutcomePending {
		from.Outcome = OutcomeUndone
	}
	msg := fmt.Sprintf("rollout undo from %s", fmtRevision(from))
	rec.Override = &records.Override{SourceUID: source.UID, ToUID: to.UID, Reason: ReasonUndone, Message: msg, Manual: true, At: c.opts.Now()}
	c.persistLocked(rec)
	c.flushLocked() // the override is recorded before the old status goes
	c.forgetStatus(to.UID)
	c.log.Info("rollout undo", "pod", full, "from", fmtRevision(from), "to", fmtRevision(to))
	c.st.Event(from.UID, corev1.EventTypeNormal, ReasonUndone, fmt.Sprintf("replaced by %s", fmtRevision(to)))
	c.notify = append(c.notify, pendingEvent{uid: to.UID, typ: corev1.EventTypeNormal, reason: ReasonUndone,
		message: fmt.Sprintf("brought back in place of %s (containers start anew)", fmtRevision(from))})
	if c.opts.Metrics != nil {
		c.opts.Metrics.ObserveRollback("undo", ReasonUndone)
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return to.Number, nil
}
