// Package manager is podhost's sync loop, the analog of the kubelet's
// syncLoop: it turns desired-pod updates into pod worker updates (after
// admission), routes runtime events and probe result changes to the pod
// workers, and runs housekeeping (orphans, leaked sandboxes, cgroups and
// volumes). It owns the desired set; statuses, events and readiness are
// the status manager's (internal/kubelet/status).
package manager

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/kubelet/allocation"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
)

// Workers is the part of the pod workers the manager drives.
type Workers interface {
	UpdatePod(podworkers.UpdatePodOptions)
	SyncKnownPods(desired []*corev1.Pod) map[types.UID]podworkers.WorkerState
	Wake(uid types.UID) bool
	IsPodTerminationRequested(uid types.UID) bool
	IsPodKnownTerminated(uid types.UID) bool
	State(uid types.UID) (podworkers.WorkerState, bool)
}

// Runtime lists what runs and collects what podhost's creates left
// behind (orphaned containerd leases and snapshots).
type Runtime interface {
	ListPods(ctx context.Context) ([]*podstate.Pod, error)
	CollectGarbage(ctx context.Context) error
}

// Store is the persistent state the manager uses (the allocation
// checkpoints through its allocation.Manager).
type Store interface {
	allocation.Store
	ListSandboxes() ([]records.SandboxRecord, error)
	// RecordedPods: the UIDs PurgePod would find a record of.
	RecordedPods() (map[types.UID]bool, error)
	PurgePod(uid types.UID) error
}

// Statuses is the status manager (*status.Manager): the manager tells it
// which pods exist; the syncer sets their statuses.
type Statuses interface {
	AddPod(pod *corev1.Pod)
	RejectPod(pod *corev1.Pod, reason, message string)
	RemovePod(uid types.UID)
	MarkTerminating(uid types.UID)
	Status(uid types.UID) (corev1.PodStatus, bool)
	ExpectSynced(uids []types.UID)
	Event(uid types.UID, typ, reason, message string)
	Changed() <-chan struct{}
}

// Cleaner removes leaked resources found by housekeeping.
type Cleaner interface {
	CleanupSandboxRecord(ctx context.Context, rec records.SandboxRecord) error
	CleanupLeaks(ctx context.Context, active func(types.UID) bool) error
}

// LogCollector removes the logs of pods that are gone and of old
// container instances (*gc.Collector); active as for Cleaner.
type LogCollector interface {
	Collect(ctx context.Context, active func(types.UID) bool) error
}

// PodEntry is one pod the API shows, not copied: Pod is the manager's own
// (read-only; a new object whenever the pod's spec changes) and its status
// is the status manager's, unless Status is set (a pod waiting for its
// dependencies, whose status the manager computes).
type PodEntry struct {
	Pod      *corev1.Pod
	Status   *corev1.PodStatus
	Warnings []string
}

// Manager owns the desired set. Its state: the desired, rejected and
// started fields under mu; the other parts are types that own their
// locking — the allocations (allocation.Manager), the pods held by their
// podhost.io/after order (holds), the removed pods still shown
// (terminatingView), the pinned identities (identityRecords),
// housekeeping's pace, the configdata index. Lock order: mu before the
// locks of holds, terminatingView and the allocations, which call nothing
// that takes mu while they hold theirs.
type Manager struct {
	workers     Workers
	rt          Runtime
	store       Store
	statuses    Statuses
	cleaner     Cleaner
	qosCgroups  QOSCgroups   // nil: the QoS-level cgroups are left alone
	logs        LogCollector // nil: no log GC
	pace        pace
	allocatable corev1.ResourceList
	enforced    corev1.ResourceList // on the top cgroup (qoscgroups.go); nil: not enforced
	nodeName    string
	nodeLabels  map[string]string
	appArmor    bool     // the host has AppArmor enabled
	admitFirst  Admitter // Options.Admit
	log         *slog.Logger
	cfg         *podset.Config
	data        DataStore         // nil: ConfigMaps and Secrets are dropped
	refs        *configdata.Index // pods by referenced ConfigMap/Secret

	cfgMu sync.Mutex // guards cfg (applied by Run, read by the API)

	changes changes // Changed
	graces  graces  // SetDeletionGrace

	mu       sync.RWMutex
	desired  map[types.UID]*corev1.Pod // admitted and wanted
	rejected map[types.UID]*corev1.Pod // failed admission (status Failed)
	started  bool                      // first snapshot dispatched

	alloc       *allocation.Manager // checkpoints, and the pods workers run while a resize is not allocated
	holds       *holds              // podhost.io/after: pods not admitted yet, kills deferred (after.go)
	terminating *terminatingView    // removed pods the API shows until their worker finished (terminating.go)
	identities  *identityRecords    // UIDs pinned by adoption (identity.go)
}

// Deps are the manager's collaborators, all built before it.
type Deps struct {
	Workers  Workers
	Runtime  Runtime
	Store    Store
	Statuses Statuses
	Cleaner  Cleaner
	// QOSCgroups, optional, gets the Burstable QoS cgroup's cpu shares
	// (qoscgroups.go).
	QOSCgroups QOSCgroups
	Logs       LogCollector // optional
	Data       DataStore    // optional: ConfigMaps and Secrets of the manifests
	// Identities, optional, keeps the UIDs pods adopted from an older
	// podhost (identity.go); without it nothing is adopted across restarts.
	Identities IdentityStore
}

// Options configure a Manager.
type Options struct {
	Allocatable corev1.ResourceList
	// EnforcedAllocatable (cpu, memory) is enforced on the pods' top
	// cgroup through QOSCgroups (admission.Host.Enforced); nil: not.
	EnforcedAllocatable corev1.ResourceList
	// NodeName and NodeLabels: the Node a kubelet would register
	// (admission.NodeLabels), matched by nodeSelector and node affinity.
	NodeName   string
	NodeLabels map[string]string
	// AppArmor: the host has AppArmor enabled (admission.Node.AppArmor).
	AppArmor bool
	// Admit runs before the node's admission (the kubelet's first admit
	// handler: the eviction manager's, refusing pods under pressure); nil: none.
	Admit  Admitter
	Logger *slog.Logger
}

// Admitter is an admit handler run before the node's admission.
type Admitter interface {
	Admit(pod *corev1.Pod) admission.Result
}

// New returns a Manager.
func New(d Deps, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Manager{
		workers: d.Workers, rt: d.Runtime, store: d.Store, statuses: d.Statuses, cleaner: d.Cleaner, qosCgroups: d.QOSCgroups, logs: d.Logs,
		allocatable: opts.Allocatable, enforced: opts.EnforcedAllocatable, nodeName: opts.NodeName, nodeLabels: opts.NodeLabels, appArmor: opts.AppArmor, admitFirst: opts.Admit, log: opts.Logger, cfg: podset.New(), data: d.Data, refs: configdata.NewIndex(),
		desired: map[types.UID]*corev1.Pod{}, rejected: map[types.UID]*corev1.Pod{},
		holds: newHolds(), terminating: newTerminatingView(), identities: newIdentityRecords(d.Identities, opts.Logger),
	}
	m.alloc = allocation.New(d.Store, d.Statuses, allocation.Options{Allocatable: opts.Allocatable, ActivePods: m.activePods, Logger: opts.Logger})
	return m
}

// Pods returns every desired, rejected or waiting pod (see PodEntry), and
// the removed ones still stopping (terminating.go), sorted by
// namespace/name.
func (m *Manager) Pods() []PodEntry {
	m.mu.RLock()
	waiting := m.holds.entries() // under mu: a pod released from waiting is admitted under mu, never listed twice
	out := make([]PodEntry, 0, len(m.desired)+len(m.rejected)+len(waiting))
	for _, p := range m.desired {
		out = append(out, PodEntry{Pod: p})
	}
	for _, p := range m.rejected {
		out = append(out, PodEntry{Pod: p})
	}
	out = append(out, waiting...)
	terminating := m.terminatingEntries(out)
	m.mu.RUnlock()
	for i := range out {
		out[i].Warnings = m.warnings(manifest.FullName(out[i].Pod))
	}
	out = append(out, m.shownTerminating(terminating)...)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Pod, out[j].Pod
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// IsDesired reports whether uid is admitted and wanted.
func (m *Manager) IsDesired(uid types.UID) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.desired[uid]
	return ok
}

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

// ActivePods are the admitted pods that may still have running containers
// (see activePods): what a node shutdown must terminate.
func (m *Manager) ActivePods() []*corev1.Pod { return m.activePods() }
