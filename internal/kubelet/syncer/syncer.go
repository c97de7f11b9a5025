// Package syncer implements the pod lifecycle the pod workers drive:
// SyncPod, SyncTerminatingPod, SyncTerminatingRuntimePod and SyncTerminatedPod
// (the kubelet's semantics). Each sync observes the runtime, plans with the
// pure computePodActions, then executes the plan through narrow interfaces
// over the runtime, sandbox, network, cgroups, volumes and state packages.
package syncer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/host/shimgroup"
	"github.com/podhost/podhost/internal/host/spec"
	"github.com/podhost/podhost/internal/kubelet/lifecycle"
	"github.com/podhost/podhost/internal/kubelet/status"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// Runtime is the part of the containerd adapter the syncer uses.
type Runtime interface {
	EnsureImage(ctx context.Context, ref string, policy corev1.PullPolicy) (runtimeapi.Image, error)
	CreateContainer(ctx context.Context, cfg runtimeapi.ContainerConfig) error
	StartContainer(ctx context.Context, id string) error
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
	// UpdateContainerResources changes a running container's cgroup limits
	// in place and records labels on it (in-place resize).
	UpdateContainerResources(ctx context.Context, id string, res *specs.LinuxResources, labels map[string]string) error
}

// PodCache lists one pod's containers now and keeps the result for the pod
// workers (internal/kubelet/podcache): the syncer calls it after it changed a pod.
// Its cost does not grow with the number of pods.
type PodCache interface {
	Refresh(ctx context.Context, uid types.UID) (*podstate.Pod, error)
	// Track records, before the create, a container the syncer creates
	// for pod uid: the pod's refreshes read it from then on.
	Track(uid types.UID, id string)
}

// Sandboxes pins and removes a pod's namespaces and per-pod files.
type Sandboxes interface {
	// Dir is where Create puts everything of sandbox id.
	Dir(id string) string
	// Create pins a user namespace with uns's mapping when uns is set.
	Create(ctx context.Context, id string, pod *corev1.Pod, uns *records.UserNSRecord) (sandbox.Paths, error)
	// IDMapped returns src's idmapped view for the sandbox's user namespace.
	IDMapped(p sandbox.Paths, src string) (string, error)
	WriteHosts(p sandbox.Paths, pod *corev1.Pod, ips []string) error
	Remove(ctx context.Context, p sandbox.Paths) error
}

// UserNamespaces hands out the user namespace ranges of pods with
// hostUsers: false (*userns.Manager).
type UserNamespaces interface {
	Get(pod *corev1.Pod) (records.UserNSRecord, error)
	Release(uid types.UID) error
}

// Network attaches and detaches a pod's network namespace.
type Network interface {
	Setup(ctx context.Context, id, netnsPath string, ports []network.PortMapping) (*network.Result, error)
	Teardown(ctx context.Context, id, netnsPath string, ports []network.PortMapping) error
}

// Cgroups manages pod cgroups.
type Cgroups interface {
	Driver() string
	EnsurePod(ctx context.Context, uid types.UID, qos corev1.PodQOSClass, r cgroups.Resources) (cgroups.PodCgroup, error)
	ContainerPath(pc cgroups.PodCgroup, containerID string) string
	RemovePod(ctx context.Context, pc cgroups.PodCgroup) error
	ListPods(ctx context.Context) ([]cgroups.PodCgroup, error)
	// PodStats and ContainerStats read usage (a resize never sets a memory
	// limit below it).
	PodStats(uid types.UID, qos corev1.PodQOSClass) (cgroups.Stats, error)
	ContainerStats(uid types.UID, qos corev1.PodQOSClass, containerID string) (cgroups.Stats, error)
}

// Volumes prepares and removes pod volumes.
type Volumes interface {
	// Prepare returns volume name → host path, and the FailedMount
	// warnings of data volumes kept at their last contents (usable).
	Prepare(ctx context.Context, pod *corev1.Pod) (paths map[string]string, warnings []error, err error)
	// Refresh rewrites the prepared configMap and secret volumes of a
	// running pod from the current ConfigMaps and Secrets.
	Refresh(ctx context.Context, pod *corev1.Pod) error
	Cleanup(ctx context.Context, uid types.UID) error
	ListPods() ([]types.UID, error)
	// TerminationLog creates the empty termination-log file of one
	// container instance under the pod's directory and returns its path.
	TerminationLog(uid types.UID, container, containerID string) (string, error)
	// PrepareSubPath makes a volumeMount's subPath safe to mount and
	// returns the host path to bind-mount (the kubelet's subpather).
	PrepareSubPath(uid types.UID, sp spec.SubPathMount) (string, error)
	// MakeMountSource creates a missing mount source as a directory when
	// a container that mounts it is created (containerd CRI's WithMounts:
	// an unset-type hostPath).
	MakeMountSource(path string) error
}

// Store is the persistent state the syncer reads and writes.
type Store interface {
	PutSandbox(records.SandboxRecord) error
	DeleteSandbox(id string) error
	ListSandboxes() ([]records.SandboxRecord, error)
	// PodSandboxes lists one pod's sandbox records (a sync of one pod
	// does not read every pod's).
	PodSandboxes(uid types.UID) ([]records.SandboxRecord, error)
	// PutLogRemoval records that a deleted pod's log directory must go,
	// DeleteLogRemoval that it went; ListLogRemovals: those still to go
	// (podlogs.go).
	PutLogRemoval(uid types.UID) error
	DeleteLogRemoval(uid types.UID) error
	ListLogRemovals() ([]types.UID, error)
}

// Observer receives what the syncer learns: statuses and events.
type Observer interface {
	SetStatus(pod *corev1.Pod, st corev1.PodStatus)
	// LastStatus is the pod's last known status (kept across podhost
	// restarts), or nil: start time and last states carry over from it.
	LastStatus(uid types.UID) *corev1.PodStatus
	// Event records an event (queued: it never waits for storage).
	Event(uid types.UID, typ, reason, message string)
	// IsDesired reports whether a pod with this UID is still wanted (its
	// manifest is present): terminated pods that are still desired keep their
	// exited containers so status and logs stay available.
	IsDesired(uid types.UID) bool
	// SourcesReady: the first manifest snapshot was applied. Until then
	// IsDesired is false for every pod, also for those still wanted.
	SourcesReady() bool
}

// Config holds host facts and paths.
type Config struct {
	LogDir         string
	BootID         string
	HostIP         string
	MemoryCapacity int64
	HostLimits     spec.HostLimits
	// CrashLoopBackOffMax caps the crash-loop back-off (0: the kubelet's
	// 5 min); below 10 s it is also the first delay.
	CrashLoopBackOffMax time.Duration
	// Data finds the ConfigMaps and Secrets a pod's containers reference,
	// those of its own source's scope (*configdata.Store); nil: none exist.
	Data PodData
	// ServiceEnv returns the service links of a pod's namespace (the
	// kubelet's enableServiceLinks variables) when a container starts;
	// nil: no Services.
	// final: they are the cluster's, enableServiceLinks applied already
	// (spec.Pod.ServiceEnvFinal).
	ServiceEnv func(pod *corev1.Pod) (env []corev1.EnvVar, final bool)
	// UserNSUnsupported says why this host cannot run pods with
	// hostUsers: false ("" when it can): their sandbox is refused with it.
	UserNSUnsupported string
}

// PodData gives one pod's Lookup: the ConfigMaps and Secrets of its own
// source's scope (*configdata.Store).
type PodData interface {
	For(pod *corev1.Pod) configdata.Lookup
}

// podData is pod's Lookup (nil without Config.Data: none exist).
func (s *Syncer) podData(pod *corev1.Pod) spec.DataSource {
	if s.cfg.Data == nil {
		return nil
	}
	return s.cfg.Data.For(pod)
}

// Syncer executes pod lifecycles. It is safe for concurrent use by one
// worker per pod UID.
type Syncer struct {
	cfg     Config
	rt      Runtime
	cache   PodCache
	sb      Sandboxes
	net     Network
	cg      Cgroups
	vol     Volumes
	store   Store
	obs     Observer
	prober  Prober
	hooks   HookRunner
	clock   clock.Clock
	log     *slog.Logger
	now     func() time.Time
	backoff *backoff // crash loops
	// pullBackoff: image pulls (the kubelet's own, not capped by
	// CrashLoopBackOffMax).
	pullBackoff *backoff
	stops       *stopper
	shims       *shimgroup.Groups
	podLogs     PodLogs
	removals    logRemovals
	users       *spec.UserCache
	slots       *startSlots
	unknown     unknownTracker // containers in unknown state (unknown.go)
	userns      UserNamespaces

	mu      sync.Mutex
	waiting map[types.UID]map[string]status.Reason // the kubelet's reason cache
	// resizeErr: the last in-place resize failure of a pod (status
	// condition PodResizeInProgress, reason Error).
	resizeErr map[types.UID]string
	// evicted: the message of each pod the eviction manager evicted (evicted.go).
	evicted map[types.UID]string
}

// Deps are the syncer's collaborators.
type Deps struct {
	Runtime   Runtime
	Cache     PodCache
	Sandboxes Sandboxes
	Network   Network
	Cgroups   Cgroups
	Volumes   Volumes
	Store     Store
	Observer  Observer
	Prober    Prober      // nil: no probes run
	Hooks     HookRunner  // nil: hooks run without exec (exec hooks fail)
	Clock     clock.Clock // times preStop hooks; nil: the real clock
	// ShimGroups assigns new sandboxes their containerd shim group, knowing
	// the groups of the sandboxes recorded; nil: one shim per pod.
	ShimGroups *shimgroup.Groups
	// PodLogs removes the log directories of deleted pods; nil: none
	// are removed (logs/gc's periodic pass still does).
	PodLogs PodLogs
	// UserNS hands out user namespace ranges; nil: pods with hostUsers:
	// false are refused.
	UserNS UserNamespaces
	Logger *slog.Logger
	Now    func() time.Time
}

// New returns a Syncer.
func New(cfg Config, d Deps) *Syncer {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Prober == nil {
		d.Prober = noProber{}
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.ShimGroups == nil {
		d.ShimGroups = shimgroup.New(1)
	}
	if d.Hooks == nil {
		d.Hooks = lifecycle.NewRunner(nil, d.Clock)
	}
	if d.PodLogs == nil {
		d.PodLogs = noPodLogs{}
	}
	return &Syncer{
		cfg: cfg, rt: d.Runtime, cache: d.Cache, sb: d.Sandboxes, net: d.Network, cg: d.Cgroups,
		vol: d.Volumes, store: d.Store, obs: d.Observer, prober: d.Prober, hooks: d.Hooks, clock: d.Clock,
		log: d.Logger, now: d.Now, backoff: newBackoff(d.Now, cfg.CrashLoopBackOffMax), pullBackoff: newBackoff(d.Now, 0), stops: newStopper(),
		shims: d.ShimGroups, podLogs: d.PodLogs, users: spec.NewUserCache(), userns: d.UserNS,
		slots:   newStartSlots(defaultStartSlots()),
		waiting: map[types.UID]map[string]status.Reason{}, resizeErr: map[types.UID]string{},
	}
}

// Close ends container stops still in flight (their syncs were cancelled)
// and waits for them: the daemon calls it after the pod workers shut down.
func (s *Syncer) Close() { s.stops.close() }

func (s *Syncer) podLog(pod *corev1.Pod) *slog.Logger {
	return s.log.With("pod", pod.Namespace+"/"+pod.Name, "podUID", string(pod.UID))
}

// runtimePod lists one pod's containers now (never nil).
func (s *Syncer) runtimePod(ctx context.Context, uid types.UID) (*podstate.Pod, error) {
	p, err := s.cache.Refresh(ctx, uid)
	if err != nil {
		return nil, fmt.Errorf("list runtime pod %s: %w", uid, err)
	}
	if p == nil {
		p = &podstate.Pod{UID: uid}
	}
	return p, nil
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
