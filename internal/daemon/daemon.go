// Package daemon wires podhost's packages together and runs them: state,
// containerd, cgroups, CNI, sandboxes, the pod workers and syncer, the
// manifest source, the PLEG, the sync loop and the API. It holds no pod
// logic of its own.
//
// Start order: state db (boot id) → containerd (with retry) → cgroups, CNI,
// sandboxes → syncer + pod workers → manifest source, PLEG, sync loop, API →
// READY=1 once every pod of the first manifest snapshot has been synced.
// SIGTERM stops podhost, never the pods: containers keep running under their
// shims and are adopted by the next start.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/admission"
	"github.com/podhost/podhost/internal/api"
	"github.com/podhost/podhost/internal/cgroups"
	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/manager"
	"github.com/podhost/podhost/internal/network"
	"github.com/podhost/podhost/internal/pleg"
	"github.com/podhost/podhost/internal/podworkers"
	"github.com/podhost/podhost/internal/rthealth"
	"github.com/podhost/podhost/internal/runtime"
	"github.com/podhost/podhost/internal/sandbox"
	"github.com/podhost/podhost/internal/source"
	"github.com/podhost/podhost/internal/state"
	"github.com/podhost/podhost/internal/syncer"
	"github.com/podhost/podhost/internal/volumes"
)

// housekeepingPeriod is how often orphans and leaks are looked for (the
// kubelet uses 2 s).
const housekeepingPeriod = 2 * time.Second

// Run runs the daemon until ctx is done.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	for _, d := range []string{cfg.StateDir, cfg.RunDir, cfg.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	db, err := state.Open(filepath.Join(cfg.StateDir, "state.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	boot, err := checkBoot(db, log)
	if err != nil {
		return err
	}
	notify("STATUS=connecting to containerd at " + cfg.ContainerdAddress)
	rt, err := runtime.Connect(ctx, cfg.ContainerdAddress, cfg.Namespace)
	if err != nil {
		return fmt.Errorf("connect to containerd: %w", err)
	}
	defer rt.Close()
	rt.Snapshotter, rt.AuthFiles, rt.HostsDir = cfg.Snapshotter, cfg.AuthFiles, cfg.RegistryHostsDir
	rt.LogMaxSize, rt.LogMaxFiles, rt.Logger = cfg.LogMaxSize, cfg.LogMaxFiles, log
	cg, err := cgroups.New(ctx, cgroups.Options{Driver: cfg.CgroupDriver, Parent: cfg.CgroupParent, Logger: log})
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	log.Info("cgroups", "mode", cg.Mode(), "driver", cg.Driver())
	netw, err := network.New(network.Config{ConfDir: cfg.CNIConfDir, BinDirs: cfg.CNIBinDirs,
		CacheDir: filepath.Join(cfg.StateDir, "cni-cache"), IPAMDataDir: filepath.Join(cfg.RunDir, "cni", "networks"), Logger: log})
	if err != nil {
		return fmt.Errorf("cni: %w", err)
	}
	allocatable, err := admission.NodeAllocatable(cfg.SystemReserved, cfg.MaxPods)
	if err != nil {
		return fmt.Errorf("node allocatable: %w", err)
	}
	limits := hostLimits()
	limits.CgroupV2 = cg.Mode() == cgroups.ModeUnified
	limits.Allocatable = allocatable
	limits.Hostname, _ = os.Hostname()
	mgr := manager.New(rt, db, nil, manager.Options{Allocatable: allocatable, Logger: log})
	prb, probeHooks := newProber(ctx, rt, mgr, log)
	defer prb.Close()
	syn := syncer.New(syncer.Config{
		LogDir: cfg.LogDir, BootID: boot, HostIP: hostIP(), MemoryCapacity: memoryCapacity(), HostLimits: limits,
	}, syncer.Deps{
		Runtime: rt, Sandboxes: sandbox.NewManager(cfg.RunDir), Network: netw, Cgroups: cg,
		Volumes: volumes.New(filepath.Join(cfg.StateDir, "pods")), Store: db, Observer: mgr, Prober: prb, Logger: log,
	})
	mgr.SetCleaner(syn)
	workers := podworkers.New(mgr.WrapHandler(syn), podworkers.Options{Store: db, Logger: log, ResyncInterval: cfg.ResyncPeriod})
	syn.SetWaker(workers)
	probeHooks.connect(syn, workers)
	mgr.SetWorkers(workers)
	if err := restoreWorkers(db, workers, log); err != nil {
		return fmt.Errorf("restore pod workers: %w", err)
	}
	return serve(ctx, cfg, log, db, rt, mgr)
}

// serve starts the long-running loops and blocks until ctx is done.
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, db *state.DB, rt *runtime.Runtime, mgr *manager.Manager) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	prev, err := previouslyAdmitted(db)
	if err != nil {
		return err
	}
	snaps := make(chan source.Snapshot, 1)
	events := make(chan pleg.PodEvent, 128)
	errc := make(chan error, 3)
	src := source.New(source.Config{Dir: cfg.ManifestDir, Relist: cfg.RelistPeriod,
		AllowInsecure: cfg.AllowInsecureManifests, Logger: log})
	go func() { errc <- src.Run(ctx, snaps) }()
	go pleg.New(rt, pleg.Options{Logger: log}).Run(ctx, events)
	go mgr.Run(ctx, snaps, events, prev, housekeepingPeriod)
	node, _ := os.Hostname()
	health := rthealth.New(cfg.ContainerdAddress, rthealth.SocketProbe(cfg.ContainerdAddress, func(ctx context.Context) error {
		_, err := rt.Client().Version(ctx) // no wait-for-ready: fails fast while containerd is down
		return err
	}), rthealth.Options{Logger: log})
	go health.Run(ctx)
	b := &backend{mgr: mgr, logDir: cfg.LogDir, rt: rt, node: node, health: health}
	go func() { errc <- api.NewServer(b, log).Listen(ctx, cfg.Socket) }()
	select {
	case <-mgr.Ready():
		log.Info("first sync complete; ready")
		notify(sddaemon.SdNotifyReady, "STATUS=running")
	case err := <-errc:
		return err
	case <-ctx.Done():
		return nil
	}
	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	case <-ctx.Done():
		notify(sddaemon.SdNotifyStopping)
		log.Info("stopping podhost; pods keep running")
		return nil
	}
}

// checkBoot compares the kernel's boot id with the recorded one. A new boot
// means every sandbox podhost recorded is gone; the syncer recreates them
// (CNI DEL with the cached result first) when it next syncs each pod.
func checkBoot(db *state.DB, log *slog.Logger) (string, error) {
	boot, err := bootID()
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	prev, err := db.BootID()
	if err != nil {
		return "", err
	}
	if prev != boot {
		if prev != "" {
			log.Info("boot id changed: host rebooted, every sandbox will be recreated", "previous", prev, "current", boot)
		}
		if err := db.SetBootID(boot); err != nil {
			return "", err
		}
	}
	return boot, nil
}

func previouslyAdmitted(db *state.DB) (map[types.UID]bool, error) {
	allocs, err := db.ListAllocations()
	if err != nil {
		return nil, err
	}
	out := make(map[types.UID]bool, len(allocs))
	for _, a := range allocs {
		out[a.UID] = true
	}
	return out, nil
}

func notify(states ...string) {
	for _, s := range states {
		_, _ = sddaemon.SdNotify(false, s)
	}
}

// restoreWorkers resumes terminations that a previous podhost had begun: a
// worker recorded as terminating is seeded straight into terminating with
// its grace period (before any desired pod is added, as the pod workers
// require). Other records are dropped: workers rewrite them as they start.
func restoreWorkers(db *state.DB, w *podworkers.PodWorkers, log *slog.Logger) error {
	recs, err := db.ListWorkers()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Phase != state.PhaseTerminating || len(r.Pod) == 0 {
			if err := db.DeleteWorker(r.UID); err != nil {
				return err
			}
			continue
		}
		var pod corev1.Pod
		if err := json.Unmarshal(r.Pod, &pod); err != nil {
			log.Warn("drop unreadable worker record", "uid", string(r.UID), "err", err)
			_ = db.DeleteWorker(r.UID)
			continue
		}
		grace := r.GracePeriod
		log.Info("resuming pod termination", "pod", r.FullName, "uid", string(r.UID), "gracePeriod", grace)
		w.UpdatePod(podworkers.UpdatePodOptions{Type: podworkers.SyncPodKill, Pod: &pod, GracePeriodOverride: &grace})
	}
	return nil
}
