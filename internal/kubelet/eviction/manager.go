package eviction

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/model/podstate"
)

// Pods lists the pods that may be evicted: admitted, not terminal
// (manager.ActivePods).
type Pods interface {
	ActivePods() []*corev1.Pod
}

// Evicter ends a pod as the kubelet's killPodFunc does for an eviction:
// the Warning event Evicted with the message, the status Failed/Evicted,
// its containers stopped within grace seconds.
type Evicter interface {
	Evict(pod *corev1.Pod, grace int64, message string)
}

// Cgroups reads memory use (*cgroups.Manager).
type Cgroups interface {
	PodsStats() (cgroups.Stats, error)
	PodStats(uid types.UID, qos corev1.PodQOSClass) (cgroups.Stats, error)
	ContainerStats(uid types.UID, qos corev1.PodQOSClass, containerID string) (cgroups.Stats, error)
}

// Containers is the pods' containers as last observed (*podcache.Cache).
type Containers interface {
	GetNewerThan(ctx context.Context, uid types.UID, notBefore time.Time) (*podstate.Pod, error)
}

// Snapshots measures writable layers (*runtime.Runtime).
type Snapshots interface {
	SnapshotUsage(ctx context.Context, id string) (bytes, inodes int64, err error)
}

// Quotas reads a disk emptyDir's usage from its project quota
// (*fsquota.Manager): ok false when it has none (it is walked).
type Quotas interface {
	Usage(uid types.UID, volume string) (bytes, inodes int64, ok bool, err error)
}

// Options configure a Manager.
type Options struct {
	Thresholds               []Threshold
	PressureTransitionPeriod time.Duration
	MaxPodGracePeriod        int64
	Period                   time.Duration // how often to look (10 s)
	// NodeFsPath: the state dir (nodefs); ImageFsPath: containerd's root (imagefs).
	NodeFsPath, ImageFsPath string
	// AllocatableMemory: node allocatable memory, for
	// allocatableMemory.available over the pods' cgroup (0: not measured).
	AllocatableMemory int64
	LogDir            string
	// VolumeDir is the host directory of a pod's emptyDir.
	VolumeDir func(uid types.UID, volume string) string
	// Quotas measures the emptyDirs that have a project ID; nil: every
	// one is walked.
	Quotas Quotas
	// ReclaimImages removes every unused image (imagegc DeleteUnused):
	// under disk pressure it runs before a pod is evicted, as the
	// kubelet's node-level reclaim; nil: none.
	ReclaimImages func(ctx context.Context) error
	MemInfo       string                        // "" = /proc/meminfo
	Statfs        func(string) (FsStats, error) // nil = Statfs
	Now           func() time.Time
	Logger        *slog.Logger
}

// Manager is the eviction manager: every Period it measures the signals
// and the pods, raises the node conditions, and evicts.
type Manager struct {
	opts  Options
	pods  Pods
	ev    Evicter
	cg    Cgroups
	ctrs  Containers
	snaps Snapshots
	eval  *Evaluator

	evicted map[types.UID]bool // evicted, still active: never twice

	mu         sync.Mutex
	conditions map[corev1.NodeConditionType]condition
}

type condition struct {
	status     bool
	transition time.Time
}

// New returns a Manager; Run starts it.
func New(pods Pods, ev Evicter, cg Cgroups, ctrs Containers, snaps Snapshots, opts Options) *Manager {
	if opts.MemInfo == "" {
		opts.MemInfo = "/proc/meminfo"
	}
	if opts.Statfs == nil {
		opts.Statfs = Statfs
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Period <= 0 {
		opts.Period = 10 * time.Second
	}
	now := opts.Now()
	return &Manager{opts: opts, pods: pods, ev: ev, cg: cg, ctrs: ctrs, snaps: snaps, evicted: map[types.UID]bool{},
		eval: &Evaluator{Thresholds: opts.Thresholds, PressureTransitionPeriod: opts.PressureTransitionPeriod, MaxPodGracePeriod: opts.MaxPodGracePeriod},
		conditions: map[corev1.NodeConditionType]condition{
			corev1.NodeMemoryPressure: {transition: now}, corev1.NodeDiskPressure: {transition: now}}}
}

// Run looks every Period until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.Period)
	defer t.Stop()
	for {
		m.Synchronize(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Synchronize is one look: measure, decide, evict. It returns the evictions.
func (m *Manager) Synchronize(ctx context.Context) []Eviction {
	now := m.opts.Now()
	obs, dedicated := m.observe()
	p := m.eval.Observe(now, obs)
	m.setConditions(p, now)
	mem, disk := false, false
	for _, t := range p.Act {
		mem = mem || signalResource[t.Signal] == corev1.ResourceMemory
		disk = disk || signalResource[t.Signal] != corev1.ResourceMemory
	}
	pods, usage := m.measure(ctx, mem, disk)
	out := m.eval.Decide(p, pods, usage, dedicated)
	if len(out) == 1 && out[0].Signal != "" && signalResource[out[0].Signal] != corev1.ResourceMemory && m.reclaimNodeLevel(ctx, p) {
		return nil
	}
	for _, e := range out {
		m.evicted[e.Pod.UID] = true
		m.opts.Logger.Info("evicting pod", "pod", e.Pod.Namespace+"/"+e.Pod.Name, "podUID", string(e.Pod.UID),
			"signal", string(e.Signal), "gracePeriod", e.Grace, "message", e.Message)
		m.ev.Evict(e.Pod, e.Grace, e.Message)
	}
	return out
}

// measure lists the active pods not evicted yet and measures them: every
// pod's memory under memory pressure, local storage of the pods with a
// limit to enforce, and of every pod under disk pressure.
func (m *Manager) measure(ctx context.Context, mem, disk bool) ([]*corev1.Pod, Usage) {
	active := m.pods.ActivePods()
	pods := make([]*corev1.Pod, 0, len(active))
	still := make(map[types.UID]bool, len(m.evicted))
	for _, p := range active {
		if m.evicted[p.UID] {
			still[p.UID] = true
			continue
		}
		pods = append(pods, p)
	}
	m.evicted = still
	usage := Usage{}
	for _, p := range pods {
		d := disk || NeedsDiskUsage(p)
		if !mem && !d {
			continue
		}
		u, err := m.measurePod(ctx, p, mem, d)
		if err != nil {
			m.opts.Logger.Debug("eviction: pod not measured", "pod", p.Namespace+"/"+p.Name, "err", err)
			continue
		}
		usage[p.UID] = u
	}
	return pods, usage
}

// observe measures the node's signals; a signal that fails is left out
// (logged at debug: its thresholds are not met).
func (m *Manager) observe() (Observations, bool) {
	obs := Observations{}
	log := m.opts.Logger
	if o, err := memoryAvailable(m.opts.MemInfo); err == nil {
		obs[SignalMemoryAvailable] = o
	} else {
		log.Debug("eviction: signal not measured", "err", err)
	}
	if m.opts.AllocatableMemory > 0 {
		if st, err := m.cg.PodsStats(); err == nil {
			obs[SignalAllocatableMemoryAvailable] = Observation{Capacity: m.opts.AllocatableMemory, Available: m.opts.AllocatableMemory - int64(st.MemoryWorkingSet)}
		} else {
			log.Debug("eviction: signal not measured", "signal", SignalAllocatableMemoryAvailable, "err", err)
		}
	}
	var nodeDev, imageDev uint64
	for _, fs := range []struct {
		path          string
		bytes, inodes Signal
		dev           *uint64
	}{{m.opts.NodeFsPath, SignalNodeFsAvailable, SignalNodeFsInodesFree, &nodeDev}, {m.opts.ImageFsPath, SignalImageFsAvailable, SignalImageFsInodesFree, &imageDev}} {
		if fs.path == "" {
			continue
		}
		st, err := m.opts.Statfs(fs.path)
		if err != nil {
			log.Debug("eviction: signal not measured", "signal", fs.bytes, "err", err)
			continue
		}
		obs[fs.bytes] = Observation{Available: st.Available, Capacity: st.Capacity}
		if st.Inodes > 0 { // filesystems without inode accounting (btrfs) report 0
			obs[fs.inodes] = Observation{Available: st.InodesFree, Capacity: st.Inodes}
		}
		*fs.dev = st.Dev
	}
	return obs, nodeDev != 0 && imageDev != 0 && nodeDev != imageDev
}

// The kubelet's words for the pressure conditions (pkg/kubelet/nodestatus).
var conditionWords = map[corev1.NodeConditionType][2][2]string{ // [status false, true][reason, message]
	corev1.NodeMemoryPressure: {{"KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
		{"KubeletHasInsufficientMemory", "kubelet has insufficient memory available"}},
	corev1.NodeDiskPressure: {{"KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
		{"KubeletHasDiskPressure", "kubelet has disk pressure"}},
}

func (m *Manager) setConditions(p Pressure, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, c := range m.conditions {
		if on := p.Conditions[t]; on != c.status {
			m.conditions[t] = condition{status: on, transition: now}
		}
	}
}

// Conditions are MemoryPressure and DiskPressure as the kubelet reports
// them in its Node, heartbeat now.
func (m *Manager) Conditions() []corev1.NodeCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := metav1.NewTime(m.opts.Now())
	out := make([]corev1.NodeCondition, 0, 2)
	for _, t := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure} {
		c := m.conditions[t]
		i, st := 0, corev1.ConditionFalse
		if c.status {
			i, st = 1, corev1.ConditionTrue
		}
		w := conditionWords[t][i]
		out = append(out, corev1.NodeCondition{Type: t, Status: st, Reason: w[0], Message: w[1],
			LastHeartbeatTime: now, LastTransitionTime: metav1.NewTime(c.transition)})
	}
	return out
}

// reclaimNodeLevel is the kubelet's reclaimNodeLevelResources for the disk
// signals: unused images go, then the signals are measured again; true
// when none of the thresholds acted on is met any more (no pod is evicted).
func (m *Manager) reclaimNodeLevel(ctx context.Context, p Pressure) bool {
	if m.opts.ReclaimImages == nil {
		return false
	}
	if err := m.opts.ReclaimImages(ctx); err != nil {
		m.opts.Logger.Warn("eviction: node-level reclaim", "err", err)
	}
	obs, _ := m.observe()
	for _, t := range p.Act {
		if o, ok := obs[t.Signal]; ok && o.Available < t.value(o.Capacity) {
			return false
		}
	}
	m.opts.Logger.Info("eviction: disk pressure relieved by removing unused images, no pod evicted")
	return true
}
