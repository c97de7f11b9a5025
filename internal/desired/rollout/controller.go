package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// DefaultMaxRevisions is how many versions of a pod are kept.
const DefaultMaxRevisions = 10

// Event reasons.
const (
	ReasonRolledBack = "RolledBack"
	ReasonUndone     = "RolloutUndo"
)

// Statuses is the status manager (*status.Manager): readiness in, events out.
type Statuses interface {
	Status(uid types.UID) (corev1.PodStatus, bool)
	Event(uid types.UID, typ, reason, message string)
	Changed() <-chan struct{}
}

// Store keeps the histories (*state.DB).
type Store interface {
	ListRollouts() ([]records.RolloutRecord, error)
	// UpdateRollouts stores put and forgets del in one commit.
	UpdateRollouts(put []records.RolloutRecord, del []string) error
	// DeleteStatus drops the last status stored for a pod: a version
	// brought back starts anew, it must not resume its old status.
	DeleteStatus(uid types.UID) error
}

// Metrics counts rollbacks (*metrics.Rollbacks).
type Metrics interface {
	ObserveRollback(trigger, reason string)
}

// Options configure a Controller.
type Options struct {
	DefaultWindow time.Duration // the daemon's rollbackAfter; 0: annotated pods only
	MaxRevisions  int           // default DefaultMaxRevisions
	Metrics       Metrics       // optional
	Logger        *slog.Logger
	Now           func() time.Time // default time.Now
}

// ErrNotFound: no history for that pod.
var ErrNotFound = errors.New("not found")

// Controller keeps the histories and rewrites the snapshots (see the
// package documentation).
type Controller struct {
	st    Statuses
	store Store
	opts  Options
	log   *slog.Logger
	kick  chan struct{} // an undo: pass the last snapshot on again

	mu     sync.Mutex
	recs   map[string]*records.RolloutRecord // by full name
	pods   map[types.UID]*corev1.Pod         // decoded revision pods
	last   *source.Snapshot                  // the sources' last snapshot
	notify []pendingEvent                    // events for restored pods, once tracked
	dirty  map[string]bool                   // histories to write (or delete) at the next flushLocked
}

type pendingEvent struct {
	uid                  types.UID
	typ, reason, message string
}

// New returns a Controller with the histories of store.
func New(st Statuses, store Store, opts Options) *Controller {
	if opts.MaxRevisions <= 0 {
		opts.MaxRevisions = DefaultMaxRevisions
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{st: st, store: store, opts: opts, log: opts.Logger.With("component", "rollout"),
		kick: make(chan struct{}, 1), recs: map[string]*records.RolloutRecord{}, pods: map[types.UID]*corev1.Pod{},
		dirty: map[string]bool{}}
	recs, err := store.ListRollouts()
	if err != nil {
		c.log.Error("read rollout histories; windows and rollbacks start afresh", "err", err)
	}
	for i := range recs {
		c.recs[recs[i].FullName] = &recs[i]
	}
	return c
}

// Run passes every snapshot of in on to out, rewritten (View), and rolls
// back versions that are not Ready within their window, until ctx is done.
func (c *Controller) Run(ctx context.Context, in <-chan source.Snapshot, out chan<- source.Snapshot) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		changed := c.st.Changed()
		emit, next, watch := c.check()
		if emit && !c.send(ctx, out) {
			return
		}
		if !watch {
			changed = nil
		}
		timer.Stop()
		var timeout <-chan time.Time
		if next > 0 {
			timer.Reset(next)
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case snap, ok := <-in:
			if !ok {
				return
			}
			c.observe(snap)
			if !c.send(ctx, out) {
				return
			}
		case <-c.kick:
			if !c.send(ctx, out) {
				return
			}
		case <-changed:
		case <-timeout:
		}
	}
}

// send passes the rewritten last snapshot on; false when ctx ended.
func (c *Controller) send(ctx context.Context, out chan<- source.Snapshot) bool {
	snap, ok := c.View()
	if !ok {
		return true
	}
	select {
	case out <- snap:
		return true
	case <-ctx.Done():
		return false
	}
}

// View is the last snapshot with every overridden pod replaced by the
// revision that runs instead; false before the first snapshot.
func (c *Controller) View() (source.Snapshot, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return source.Snapshot{}, false
	}
	out := *c.last
	out.Pods = make([]*corev1.Pod, 0, len(c.last.Pods))
	for _, p := range c.last.Pods {
		out.Pods = append(out.Pods, c.runningLocked(p))
	}
	return out, true
}

// runningLocked is the pod that runs for the source's version p.
func (c *Controller) runningLocked(p *corev1.Pod) *corev1.Pod {
	rec := c.recs[manifest.FullName(p)]
	if rec == nil || rec.Override == nil || rec.Override.SourceUID != p.UID {
		return p
	}
	prev := c.podLocked(rec, rec.Override.ToUID)
	if prev == nil {
		return p
	}
	cp := prev.DeepCopy()
	cp.Annotations[wellknown.AnnotationRolledBackFrom] = manifest.Hash(p)
	cp.Annotations[wellknown.AnnotationRolledBackReason] = withMessage(rec.Override.Reason, rec.Override.Message)
	return cp
}

// podLocked decodes (once) the pod of rec's revision uid; nil if none.
func (c *Controller) podLocked(rec *records.RolloutRecord, uid types.UID) *corev1.Pod {
	if p := c.pods[uid]; p != nil {
		return p
	}
	rev := findRevision(rec, uid)
	if rev == nil {
		return nil
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal(rev.Pod, p); err != nil || p.UID != uid {
		c.log.Warn("stored revision does not decode; not brought back", "pod", rec.FullName, "revision", rev.Number, "err", err)
		return nil
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	c.pods[uid] = p
	return p
}

func findRevision(rec *records.RolloutRecord, uid types.UID) *records.Revision {
	for i := range rec.Revisions {
		if rec.Revisions[i].UID == uid {
			return &rec.Revisions[i]
		}
	}
	return nil
}

// window is the rollback window of a pod version.
func (c *Controller) window(p *corev1.Pod) time.Duration {
	if v, ok := p.Annotations[wellknown.AnnotationRollbackAfter]; ok {
		if d, err := wellknown.ParseRollbackAfter(v); err == nil {
			return d
		}
	}
	return c.opts.DefaultWindow
}

// forgetStatus drops the status a restored version left in the store when
// it was replaced (its restart counts, its running containers that are gone):
// the status manager would resume it when the pod is added again.
func (c *Controller) forgetStatus(uid types.UID) {
	if err := c.store.DeleteStatus(uid); err != nil {
		c.log.Warn("drop the stored status of a restored pod", "podUID", string(uid), "err", err)
	}
}

// persistLocked queues rec for the next flushLocked.
func (c *Controller) persistLocked(rec *records.RolloutRecord) { c.dirty[rec.FullName] = true }

// flushLocked writes the queued histories in one commit: those still known
// are stored, the others deleted. A failed write is logged and the queue
// kept for the next flush.
func (c *Controller) flushLocked() {
	if len(c.dirty) == 0 {
		return
	}
	var put []records.RolloutRecord
	var del []string
	for name := range c.dirty {
		if rec := c.recs[name]; rec != nil {
			put = append(put, *rec)
		} else {
			del = append(del, name)
		}
	}
	if err := c.store.UpdateRollouts(put, del); err != nil {
		c.log.Warn("persist rollout histories", "pods", len(c.dirty), "err", err)
		return
	}
	clear(c.dirty)
}

func fmtRevision(r *records.Revision) string {
	return fmt.Sprintf("revision %d (%s)", r.Number, r.Hash)
}
