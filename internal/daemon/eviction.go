package daemon

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/host/fsquota"
	"github.com/podhost/podhost/internal/host/statedir"
	"github.com/podhost/podhost/internal/host/volumes"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/kubelet/eviction"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/syncer"
)

// evictionThresholds parses the config's eviction thresholds (the config
// checked them already; this is the kubelet's full parse).
func evictionThresholds(cfg *config.Config) ([]eviction.Threshold, error) {
	ts, err := eviction.Parse(cfg.EvictionHard, cfg.EvictionSoft, cfg.EvictionSoftGracePeriod)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ts, nil
}

// newEviction builds the eviction manager: the state dir as nodefs,
// imageFSPath as imagefs, the enforced allocatable memory (the limit on
// cgroupParent) for allocatableMemory.available, image GC's DeleteUnused
// as the node-level reclaim under disk pressure.
func (d *daemon) newEviction() *eviction.Manager {
	c := d.cfg.Eviction
	var allocatable int64
	if q, ok := d.res.Enforced[corev1.ResourceMemory]; ok {
		allocatable = q.Value()
	}
	vols := volumes.New(statedir.PodsDir(d.cfg.StateDir))
	opts := eviction.Options{Thresholds: d.thresholds, PressureTransitionPeriod: c.EvictionPressureTransitionPeriod, MaxPodGracePeriod: c.EvictionMaxPodGracePeriod,
		Period: c.EvictionMonitoringPeriod, NodeFsPath: d.cfg.StateDir, ImageFsPath: d.cfg.ImageFSPath, AllocatableMemory: allocatable,
		LogDir: d.cfg.LogDir, VolumeDir: vols.EmptyDir, ReclaimImages: d.imageGC().DeleteUnused, Logger: d.log.With("component", "eviction")}
	if d.quotas != nil {
		opts.Quotas = d.quotas
	}
	return eviction.New(d.mgr, evicter{syncer: d.syncer, workers: d.workers, event: d.statuses.Event}, d.cg, d.cache, d.rt, opts)
}

// newQuotas builds the emptyDirs' project IDs over the state db (their
// records loaded, those of removed directories released); nil, walking
// every emptyDir, if the records cannot be read.
func (d *daemon) newQuotas() *fsquota.Manager {
	q, err := fsquota.New(d.db, fsquota.Options{Logger: d.log.With("component", "fsquota")})
	if err != nil {
		d.log.Warn("emptyDirs measured by walking only", "err", err)
		return nil
	}
	return q
}

// runEviction starts the eviction manager once the first sync is done.
func (d *daemon) runEviction(ctx context.Context, g *errgroup.Group) {
	g.Go(func() error {
		select {
		case <-d.statuses.Ready():
			d.eviction.Run(ctx)
		case <-ctx.Done():
		}
		return nil
	})
}

// evicter is the kubelet's killPodFunc for the eviction manager: the
// status function (syncer.MarkEvicted: Failed/Evicted), the Warning event
// Evicted, then a kill of the pod through its worker with the grace
// period override.
type evicter struct {
	syncer  *syncer.Syncer
	workers *podworkers.PodWorkers
	event   func(uid types.UID, typ, reason, message string)
}

func (e evicter) Evict(pod *corev1.Pod, grace int64, message string) {
	e.syncer.MarkEvicted(pod.UID, message)
	e.event(pod.UID, corev1.EventTypeWarning, eviction.Reason, message)
	e.workers.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, Pod: pod, GracePeriodOverride: &grace})
}

// evictionAdmit is the eviction manager's admit handler for the pod
// manager, which is built before it.
type evictionAdmit struct{ d *daemon }

func (a evictionAdmit) Admit(pod *corev1.Pod) admission.Result { return a.d.eviction.Admit(pod) }
