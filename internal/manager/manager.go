// Package manager is podhost's sync loop, the analog of the kubelet's
// syncLoop: it turns desired-pod updates into pod worker updates (after
// admission), routes runtime events to the pod workers, runs housekeeping
// (orphans, leaked sandboxes, cgroups and volumes), and keeps the pod
// statuses and events the API serves.
package manager

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/podconfig"
	"github.com/podhost/podhost/internal/podstate"
	"github.com/podhost/podhost/internal/podworkers"
	"github.com/podhost/podhost/internal/source"
	"github.com/podhost/podhost/internal/state"
)

// Workers is the part of the pod workers the manager drives.
type Workers interface {
	UpdatePod(podworkers.UpdatePodOptions)
	SyncKnownPods(desired []*corev1.Pod) map[types.UID]podworkers.WorkerState
	Wake(uid types.UID) bool
	IsPodTerminationRequested(uid types.UID) bool
}

// Runtime lists what runs.
type Runtime interface {
	ListPods(ctx context.Context) ([]*podstate.Pod, error)
}

// Store is the persistent state the manager uses.
type Store interface {
	PutStatuses(map[types.UID]corev1.PodStatus) error
	GetStatus(uid types.UID) (corev1.PodStatus, error)
	AddEvent(uid types.UID, e state.Event) error
	Events(uid types.UID) ([]state.Event, error)
	PutAllocations([]state.Allocation) error
	DeleteAllocation(uid types.UID) error
	ListSandboxes() ([]state.SandboxRecord, error)
	PurgePod(uid types.UID) error
}

// Cleaner removes leaked resources found by housekeeping.
type Cleaner interface {
	CleanupSandboxRecord(ctx context.Context, rec state.SandboxRecord) error
	CleanupLeaks(ctx context.Context, active func(types.UID) bool) error
}

// PodEntry is one pod as the API shows it.
type PodEntry struct {
	Pod      *corev1.Pod
	Warnings []string
}

// Manager owns the desired set and the statuses.
type Manager struct {
	workers     Workers
	rt          Runtime
	store       Store
	cleaner     Cleaner
	allocatable corev1.ResourceList
	log         *slog.Logger
	cfg         *podconfig.Config

	cfgMu sync.Mutex // guards cfg (applied by Run, read by the API)

	mu       sync.RWMutex
	desired  map[types.UID]*corev1.Pod // admitted and wanted
	rejected map[types.UID]*corev1.Pod // failed admission (status Failed)
	statuses map[types.UID]corev1.PodStatus
	synced   map[types.UID]bool // pods whose first sync has completed
	dirty    map[types.UID]bool // statuses not yet persisted
	started  bool               // first snapshot dispatched
	readyCh  chan struct{}
}

// Options configure a Manager.
type Options struct {
	Allocatable corev1.ResourceList
	Logger      *slog.Logger
}

// New returns a Manager; call SetWorkers before Run.
func New(rt Runtime, store Store, cleaner Cleaner, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Manager{
		rt: rt, store: store, cleaner: cleaner, allocatable: opts.Allocatable, log: opts.Logger,
		cfg:     podconfig.New(),
		desired: map[types.UID]*corev1.Pod{}, rejected: map[types.UID]*corev1.Pod{},
		statuses: map[types.UID]corev1.PodStatus{}, synced: map[types.UID]bool{}, dirty: map[types.UID]bool{},
		readyCh: make(chan struct{}),
	}
}

// SetWorkers wires the pod workers (which need the manager's handler first).
func (m *Manager) SetWorkers(w Workers) { m.workers = w }

// Ready is closed once the first snapshot has been applied and every pod
// admitted from it has finished its first sync (sd_notify READY=1).
func (m *Manager) Ready() <-chan struct{} { return m.readyCh }

// Pods returns every desired or rejected pod with its current status, sorted
// by namespace/name.
func (m *Manager) Pods() []PodEntry {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]PodEntry, 0, len(m.desired)+len(m.rejected))
	add := func(p *corev1.Pod) {
		cp := p.DeepCopy()
		if st, ok := m.statuses[p.UID]; ok {
			cp.Status = st
		} else {
			cp.Status = corev1.PodStatus{Phase: corev1.PodPending}
		}
		out = append(out, PodEntry{Pod: cp, Warnings: m.warnings(p.Namespace + "/" + p.Name)})
	}
	for _, p := range m.desired {
		add(p)
	}
	for _, p := range m.rejected {
		add(p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pod, out[j].Pod
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// Events returns a pod's recorded events.
func (m *Manager) Events(uid types.UID) ([]state.Event, error) { return m.store.Events(uid) }

// SetStatus records a computed status (syncer.Observer). It is persisted
// by the next flush (statuses are derived data: a lost one is recomputed by
// the next sync, so they need no write of their own).
func (m *Manager) SetStatus(pod *corev1.Pod, st corev1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, desired := m.desired[pod.UID]
	_, rejected := m.rejected[pod.UID]
	if !desired && !rejected {
		return // a pod being torn down: nobody will ask for its status
	}
	prev, had := m.statuses[pod.UID]
	m.statuses[pod.UID] = st
	if !had || !statusEqual(prev, st) {
		m.dirty[pod.UID] = true
	}
}

// flushStatuses persists changed statuses in one transaction.
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
	}
}

// LastStatus returns the pod's last known status, or nil (syncer.Observer).
func (m *Manager) LastStatus(uid types.UID) *corev1.PodStatus {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st, ok := m.statuses[uid]
	if !ok {
		return nil
	}
	return st.DeepCopy()
}

// Event records an event for a pod (syncer.Observer).
func (m *Manager) Event(uid types.UID, typ, reason, message string) {
	e := state.Event{Time: time.Now(), Type: typ, Reason: reason, Message: message}
	if err := m.store.AddEvent(uid, e); err != nil {
		m.log.Warn("record event", "uid", string(uid), "err", err)
	}
}

// IsDesired reports whether uid is still wanted (syncer.Observer).
func (m *Manager) IsDesired(uid types.UID) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.desired[uid]
	return ok
}

func (m *Manager) markSynced(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.synced[uid] {
		return
	}
	m.synced[uid] = true
	m.checkReadyLocked()
}

func (m *Manager) checkReadyLocked() {
	if !m.started {
		return
	}
	select {
	case <-m.readyCh:
		return
	default:
	}
	for uid := range m.desired {
		if !m.synced[uid] {
			return
		}
	}
	close(m.readyCh)
}

// SetCleaner wires the leak cleaner (the syncer).
func (m *Manager) SetCleaner(c Cleaner) { m.cleaner = c }

// FileErrors returns the manifest files that currently fail to load.
func (m *Manager) FileErrors() []source.FileError {
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	return m.cfg.FileErrors()
}

func (m *Manager) warnings(fullName string) []string {
	m.cfgMu.Lock()
	defer m.cfgMu.Unlock()
	return m.cfg.Warnings(fullName)
}
