package status

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podhost/podhost/internal/model/records"
)

// DefaultFlushPeriod is how often changed statuses are persisted.
const DefaultFlushPeriod = time.Second

// Store is where statuses and events are kept (*state.DB).
type Store interface {
	PutStatuses(map[types.UID]corev1.PodStatus) error
	GetStatus(uid types.UID) (corev1.PodStatus, error)
	AddEvents(evs []records.PodEvent) error
	Events(uid types.UID) ([]records.Event, error)
}

// ManagerOptions configure a Manager; zero values take the defaults.
type ManagerOptions struct {
	FlushPeriod time.Duration
	Clock       clock.WithTicker
	Logger      *slog.Logger
}

// Manager owns the computed statuses of the pods podhost knows (the
// kubelet's status.Manager): the syncer sets them, the API reads them, and
// they are flushed to the store once a period (statuses are derived data:
// one lost in a crash is recomputed by the next sync — docs/decisions.md 1).
// It also records events and tells when every pod of the first manifest
// snapshot has been synced (sd_notify READY).
type Manager struct {
	store Store
	opts  ManagerOptions
	log   *slog.Logger

	mu   sync.Mutex
	pods map[types.UID]bool // tracked pods: true desired, false rejected or stopping
	// names are the tracked pods' namespace and name, stored with their
	// events (listed under them once the pod is deleted).
	names map[types.UID]types.NamespacedName
	// stopping: removed pods tracked until their worker finished
	// (MarkTerminating); their statuses are shown, not persisted.
	stopping map[types.UID]bool
	statuses map[types.UID]corev1.PodStatus
	// revs: the revision of each status, from seq: it changes exactly when
	// the status does (the API rebuilds a pod's view only then).
	revs   map[types.UID]uint64
	seq    uint64
	dirty  map[types.UID]bool
	synced map[types.UID]bool // a status was computed since podhost started
	expect map[types.UID]bool // nil until ExpectSynced
	// shutdown: pods being terminated by a node shutdown (MarkNodeShutdown)
	shutdown map[types.UID]bool
	ready    chan struct{}
	changed  chan struct{} // closed and replaced at each change (watches)
	events   eventQueue
}

// NewManager returns a Manager over store.
func NewManager(store Store, opts ManagerOptions) *Manager {
	if opts.FlushPeriod <= 0 {
		opts.FlushPeriod = DefaultFlushPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Manager{
		store: store, opts: opts, log: opts.Logger,
		pods: map[types.UID]bool{}, names: map[types.UID]types.NamespacedName{}, statuses: map[types.UID]corev1.PodStatus{}, revs: map[types.UID]uint64{},
		dirty: map[types.UID]bool{}, synced: map[types.UID]bool{}, ready: make(chan struct{}),
		changed:  make(chan struct{}),
		shutdown: map[types.UID]bool{}, stopping: map[types.UID]bool{},
		events: eventQueue{kick: make(chan struct{}, 1)},
	}
}

// AddPod tracks an admitted (desired) pod. Until its first sync its status
// is the last one persisted, if any (start time and last states carry over
// podhost restarts), unless that is a rejection: a pod admitted after being
// rejected (re-admitted after an edit, or after a restart) starts afresh.
func (m *Manager) AddPod(pod *corev1.Pod) {
	st, err := m.store.GetStatus(pod.UID)
	m.mu.Lock()
	defer m.mu.Unlock()
	if desired, tracked := m.pods[pod.UID]; tracked && !desired {
		m.dropRejectionLocked(pod.UID)
	}
	if m.stopping[pod.UID] {
		// Applied again while it stopped: the stopping run's status (a
		// terminal phase once killed) is not the new run's; it starts from
		// the one persisted before the removal, as after a restart.
		delete(m.stopping, pod.UID)
		delete(m.statuses, pod.UID)
		m.seq++
		m.revs[pod.UID] = m.seq
	}
	m.pods[pod.UID] = true
	m.names[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if _, ok := m.statuses[pod.UID]; !ok && err == nil && st.Phase != "" && !IsRejected(st) {
		m.putLocked(pod.UID, clearNodeShutdown(st))
	}
	m.notifyLocked()
}

// MarkNodeShutdown records that the node shutdown terminates pod (the
// kubelet's nodeshutdown manager): from now on its status is Failed with
// reason Terminated and a DisruptionTarget condition; an event says so.
// A later podhost (after the reboot) drops that terminal phase again when
// the pod is added (clearNodeShutdown): the pod's manifest is still there,
// so it starts again.
func (m *Manager) MarkNodeShutdown(pod *corev1.Pod) {
	m.mu.Lock()
	if _, ok := m.pods[pod.UID]; !ok {
		m.mu.Unlock()
		return
	}
	m.shutdown[pod.UID] = true
	if st, ok := m.statuses[pod.UID]; ok {
		m.putLocked(pod.UID, applyNodeShutdown(st, m.opts.Clock.Now()))
		m.dirty[pod.UID] = true
	}
	m.mu.Unlock()
	m.Event(pod.UID, corev1.EventTypeNormal, ReasonNodeShutdown, MessageNodeShutdown)
}

// RejectPod tracks a pod that failed admission: Failed with the reason,
// and a Warning event.
func (m *Manager) RejectPod(pod *corev1.Pod, reason, message string) {
	m.mu.Lock()
	m.pods[pod.UID] = false
	m.names[pod.UID] = types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	delete(m.stopping, pod.UID)
	m.mu.Unlock()
	m.Event(pod.UID, corev1.EventTypeWarning, reason, message)
	st := Compute(pod, Inputs{Rejected: &Reason{Reason: reason, Message: message}, Now: m.opts.Clock.Now()})
	m.set(pod.UID, st)
}

// RemovePod stops tracking uid: its status is dropped (the store's copy
// goes with the pod's other records when housekeeping finds the pod gone).
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
	delete(m.names, uid)
	delete(m.stopping, uid)
	delete(m.statuses, uid)
	delete(m.revs, uid)
	delete(m.dirty, uid)
	delete(m.synced, uid)
	delete(m.shutdown, uid)
	m.checkReadyLocked()
	m.notifyLocked()
}

// MarkTerminating keeps tracking uid, removed from the desired set, while
// it stops: its status still changes (containers exit) and the API shows
// it, but it is no longer desired (its content goes at its cleanup).
// RemovePod ends the tracking once it finished.
func (m *Manager) MarkTerminating(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[uid]; ok {
		m.pods[uid], m.stopping[uid] = false, true
		m.checkReadyLocked()
		m.notifyLocked()
	}
}

// IsDesired reports whether uid is tracked as an admitted, wanted pod.
func (m *Manager) IsDesired(uid types.UID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pods[uid]
}

// SetStatus records a computed status of a tracked pod (a stopping one
// too, not persisted: MarkTerminating); statuses of pods no longer
// tracked (removed at once, or finished) are ignored.
func (m *Manager) SetStatus(pod *corev1.Pod, st corev1.PodStatus) { m.set(pod.UID, st) }

func (m *Manager) set(uid types.UID, st corev1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[uid]; !ok {
		return
	}
	if m.shutdown[uid] {
		st = applyNodeShutdown(st, m.opts.Clock.Now())
	}
	// An equal status is not stored: the one kept is what watches last
	// sent (they compare with reflect.DeepEqual; a time read back from
	// state.db equals a recomputed one only semantically).
	if prev, had := m.statuses[uid]; !had || !equality.Semantic.DeepEqual(prev, st) {
		m.putLocked(uid, st)
		if !m.stopping[uid] {
			m.dirty[uid] = true
		}
		m.notifyLocked()
	}
	if !m.synced[uid] {
		m.synced[uid] = true
		m.checkReadyLocked()
	}
}

// Status returns a copy of uid's current status.
func (m *Manager) Status(uid types.UID) (corev1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.statuses[uid]
	if !ok {
		return corev1.PodStatus{}, false
	}
	return *st.DeepCopy(), true
}

// Revision returns the revision of uid's status: it changes whenever the
// status does; 0 without a status.
func (m *Manager) Revision(uid types.UID) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.revs[uid]
}

// StatusRevision is Status with the status's Revision, read together.
func (m *Manager) StatusRevision(uid types.UID) (corev1.PodStatus, uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.statuses[uid]
	if !ok {
		return corev1.PodStatus{}, 0, false
	}
	return *st.DeepCopy(), m.revs[uid], true
}

func (m *Manager) putLocked(uid types.UID, st corev1.PodStatus) {
	m.statuses[uid] = st
	m.seq++
	m.revs[uid] = m.seq
}

// LastStatus returns uid's last known status, or nil.
func (m *Manager) LastStatus(uid types.UID) *corev1.PodStatus {
	st, ok := m.Status(uid)
	if !ok {
		return nil
	}
	return &st
}

// Changed is closed at the next change: a pod tracked or dropped, a status
// that differs from the previous one, an event recorded (API watches).
func (m *Manager) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func (m *Manager) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// ExpectSynced names the pods of the first manifest snapshot: Ready is
// closed once each has had a status computed (or is no longer tracked).
func (m *Manager) ExpectSynced(uids []types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expect = make(map[types.UID]bool, len(uids))
	for _, u := range uids {
		m.expect[u] = true
	}
	m.checkReadyLocked()
}

// SourcesReady reports whether ExpectSynced was called: the manager has
// applied the first manifest snapshot. Before that IsDesired is false for
// every pod, also for the pods the manifests still want.
func (m *Manager) SourcesReady() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.expect != nil
}

// Ready is closed once every pod named by ExpectSynced has been synced.
func (m *Manager) Ready() <-chan struct{} { return m.ready }

func (m *Manager) checkReadyLocked() {
	if m.expect == nil {
		return
	}
	select {
	case <-m.ready:
		return
	default:
	}
	for uid := range m.expect {
		if _, tracked := m.pods[uid]; tracked && !m.synced[uid] && !m.stopping[uid] {
			return // a removed pod does not hold readiness back (it may never sync)
		}
	}
	close(m.ready)
}

// Run flushes changed statuses every period until ctx is done, then once
// more.
func (m *Manager) Run(ctx context.Context) {
	t := m.opts.Clock.NewTicker(m.opts.FlushPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.Flush()
			return
		case <-t.C():
			m.Flush()
		case <-m.events.kick:
			m.flushEvents()
		}
	}
}

// Flush persists the events recorded and the statuses changed since the
// last flush. A failed write keeps them for the next flush.
func (m *Manager) Flush() {
	m.flushEvents()
	m.flushStatuses()
}

// flushStatuses writes the dirty statuses in one transaction.
func (m *Manager) flushStatuses() {
	m.mu.Lock()
	if len(m.dirty) == 0 {
		m.mu.Unlock()
		return
	}
	out := make(map[types.UID]corev1.PodStatus, len(m.dirty))
	for uid := range m.dirty {
		if st, ok := m.statuses[uid]; ok {
			out[uid] = st
		}
	}
	m.dirty = map[types.UID]bool{}
	m.mu.Unlock()
	if err := m.store.PutStatuses(out); err != nil {
		m.log.Warn("persist statuses", "err", err)
		m.mu.Lock()
		for uid := range out {
			if _, ok := m.statuses[uid]; ok {
				m.dirty[uid] = true
			}
		}
		m.mu.Unlock()
	}
}
