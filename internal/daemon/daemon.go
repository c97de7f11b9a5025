// Package daemon wires podhost's packages together and runs them: state,
// containerd, cgroups, CNI, sandboxes, the status manager, prober, pod
// cache, syncer and pod workers, the manifest source, the PLEG, the sync
// loop and the API. It holds no pod logic of its own.
//
// Everything is built in dependency order (no late setters). Start order:
// state db (boot id) → containerd (with retry) → cgroups, CNI, sandboxes →
// status manager, prober, pod cache → syncer → pod workers (terminations
// restored) → manager → source, PLEG, sync loop (beating the systemd
// watchdog's heartbeat; the pinger runs from the start of Run), status
// flush, graceful node shutdown (logind inhibitor) and API in one errgroup → READY=1 once every pod of the first manifest snapshot has
// been synced. Shutdown goes in reverse (containerd's server does the
// same): the API stops accepting and every loop ends, the pod workers stop
// (in-flight syncs cancelled), the last statuses are flushed, then the
// prober, in-flight container stops, containerd and the db close.
// SIGTERM stops podhost, never the pods: containers keep running under
// their shims and are adopted by the next start.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/containerd/v2/pkg/apparmor"
	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/desired/podsecurity"
	"github.com/podhost/podhost/internal/desired/rolling"
	"github.com/podhost/podhost/internal/desired/rollout"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/fsquota"
	"github.com/podhost/podhost/internal/host/imagesig"
	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/host/shimgroup"
	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/host/statedir"
	"github.com/podhost/podhost/internal/host/volumes"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/kubelet/eviction"
	"github.com/podhost/podhost/internal/kubelet/lifecycle"
	"github.com/podhost/podhost/internal/kubelet/manager"
	"github.com/podhost/podhost/internal/kubelet/pleg"
	"github.com/podhost/podhost/internal/kubelet/podcache"
	"github.com/podhost/podhost/internal/kubelet/podworkers"
	"github.com/podhost/podhost/internal/kubelet/prober"
	"github.com/podhost/podhost/internal/kubelet/status"
	"github.com/podhost/podhost/internal/kubelet/syncer"
	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/logs/gc"
	"github.com/podhost/podhost/internal/ops/footprint"
	"github.com/podhost/podhost/internal/ops/metrics"
	"github.com/podhost/podhost/internal/ops/rthealth"
	"github.com/podhost/podhost/internal/ops/watchdog"
	"github.com/podhost/podhost/internal/services/api"
	"github.com/podhost/podhost/internal/services/kubeapi/stream"
)

// housekeepingPeriod is how often orphans and leaks are looked for (the
// kubelet uses 2 s).
const housekeepingPeriod = 2 * time.Second

// imageGCPeriod is how often the image filesystem is checked (the
// kubelet: 5 min; an appliance's disk is small, a check is one statfs).
const imageGCPeriod = 30 * time.Second

// workersShutdownTimeout bounds the wait for in-flight syncs at shutdown.
const workersShutdownTimeout = 10 * time.Second

// Run runs the daemon until ctx is done, then shuts it down in order.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	footprint.SetGCDefaults(os.Getenv)
	stream.RouteKlog(log) // upstream's streaming code logs through klog
	for _, line := range cfg.ExposedCredentials() {
		log.Warn("credentials readable by other users: " + line)
	}
	hb := watchdog.NewHeartbeat(nil)
	defer startWatchdog(hb, log)()
	// The state dir holds the pods' volumes: closed to other local users
	// (an open one is tightened, and logged), as the kubelet's root dir.
	if err := statedir.Secure(cfg.StateDir, log); err != nil {
		return err
	}
	for _, d := range []string{cfg.RunDir, cfg.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	started := time.Now()
	thresholds, err := evictionThresholds(cfg)
	if err != nil {
		return err
	}
	res, err := nodeAllocatable(cfg, thresholds)
	if err != nil {
		return err
	}
	if err := ownTempMounts(filepath.Join(cfg.StateDir, "tmpmounts"), log); err != nil {
		return err
	}
	// From here to the end of Run: a start-up or shutdown that hangs is
	// where a dump helps most.
	stacksCtx, stopStacks := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStacks()
	go dumpStacksOnSignal(stacksCtx, cfg.RunDir, log)
	db, dbRecovery, err := openState(cfg, log)
	if err != nil {
		return err
	}
	defer db.Close()
	boot, rebooted, err := checkBoot(db, log)
	if err != nil {
		return err
	}
	notify("STATUS=connecting to containerd at " + cfg.ContainerdAddress)
	rt, err := runtime.Connect(ctx, cfg.ContainerdAddress, cfg.Namespace, runtime.Options{
		Snapshotter: cfg.Snapshotter, LogDriver: cfg.LogDriver, AuthFiles: cfg.AuthFiles, HostsDir: cfg.RegistryHostsDir,
		LogMaxSize: cfg.LogMaxSize, LogMaxFiles: cfg.LogMaxFiles, RuntimeRequestTimeout: cfg.RuntimeRequestTimeout, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("connect to containerd: %w", err)
	}
	defer rt.Close()
	cg, err := cgroups.New(ctx, cgroups.Options{Driver: cfg.CgroupDriver, Parent: cfg.CgroupParent, Logger: log})
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	log.Info("cgroups", "mode", cg.Mode(), "driver", cg.Driver())
	if err := rebuildState(ctx, cfg, log, db, rt, cg, boot, dbRecovery); err != nil {
		return err
	}
	netw, err := network.New(network.Config{ConfDir: cfg.CNIConfDir, BinDirs: cfg.CNIBinDirs,
		CacheDir: filepath.Join(cfg.StateDir, "cni-cache"), IPAMDataDir: filepath.Join(cfg.RunDir, "cni", "networks"), Logger: log})
	if err != nil {
		return fmt.Errorf("cni: %w", err)
	}
	if err := netw.EnsureFirewall(ctx); err != nil {
		log.Warn("localnet firewall not installed: pods with hostPorts will not start until it is", "err", err)
	}
	shims, err := shimGroups(db, cfg.ShimGroupSize)
	if err != nil {
		return err
	}
	d := &daemon{cfg: cfg, log: log, db: db, rt: rt, heartbeat: hb, shims: shims, started: started, res: res, thresholds: thresholds, nodeName: nodeNameOf(cfg)}
	if d.dirPolicy, d.urlPolicy, d.clusterPolicy, err = sourcePolicies(cfg.PodSecurity); err != nil {
		return err
	}
	if d.images, err = imageVerifier(cfg, rt, log); err != nil {
		return err
	}
	d.build(boot, cg, netw)
	defer d.close()
	if err := restoreWorkers(db, d.workers, d.mgr, rebooted, log); err != nil {
		return fmt.Errorf("restore pod workers: %w", err)
	}
	return d.serve(ctx)
}

// nodeAllocatable reads the node's capacity, what pods are admitted
// against (the kubelet's node status allocatable) and what is enforced on
// their top cgroup; a systemReserved beyond the node's capacity is refused
// before anything starts, as the kubelet refuses it.
func nodeAllocatable(cfg *config.Config, thresholds []eviction.Threshold) (admission.NodeResources, error) {
	res, err := admission.Host{MaxPods: cfg.MaxPods, RootDir: cfg.StateDir, EvictionReservation: func(c corev1.ResourceList) corev1.ResourceList {
		return eviction.Reservation(thresholds, c)
	}}.Resources(cfg.SystemReserved)
	if err != nil {
		return res, fmt.Errorf("node allocatable: %w", err)
	}
	return res, nil
}

// daemon holds what Run built, in the order it was built.
type daemon struct {
	cfg *config.Config
	log *slog.Logger
	// dirPolicy, urlPolicy: the manifest dir's and the URL's podSecurity
	// (the dir's also holds the kube API's writes, as podhost apply's).
	dirPolicy, urlPolicy podsecurity.Policy
	clusterPolicy        podsecurity.Policy // the cluster source's (cluster.kubeconfig set)
	images               *imagesig.Verifier // the image policy; nil: off
	db                   *state.DB
	rt                   *runtime.Runtime
	statuses             *status.Manager
	prober               *prober.Manager
	cache                *podcache.Cache
	syncer               *syncer.Syncer
	workers              *podworkers.PodWorkers
	mgr                  *manager.Manager
	eviction             *eviction.Manager
	quotas               *fsquota.Manager // emptyDirs' project IDs (nil: every emptyDir is walked)
	cg                   *cgroups.Manager
	metrics              *metrics.Metrics
	rollout              *rollout.Controller // built by serve (runRollout)
	rolling              *rolling.Controller // built by serve (runRolling)
	shims                *shimgroup.Groups   // the syncer's, with the recorded sandboxes
	// heartbeat is beaten by the sync loop (systemd watchdog)
	heartbeat *watchdog.Heartbeat
	started   time.Time               // when Run began
	res       admission.NodeResources // computed before anything started
	// thresholds: the eviction thresholds of the config (parsed at start)
	thresholds []eviction.Threshold
	hostIP     string            // pods' status.hostIP, the node's InternalIP (chosen by build)
	data       *configdata.Store // the manifests' ConfigMaps and Secrets (built by build)
	nodeName   string            // the Node's name: every pod's spec.nodeName
	dns        *clusterDNS       // the pods' DNS server (built by build; nil: off)
}

// shimGroups packs new sandboxes size to a containerd shim, knowing the
// groups of the sandboxes recorded (read after the state rebuild).
func shimGroups(db *state.DB, size int) (*shimgroup.Groups, error) {
	recs, err := db.ListSandboxes()
	if err != nil {
		return nil, fmt.Errorf("shim groups: read sandbox records: %w", err)
	}
	g := shimgroup.New(size)
	for _, r := range recs {
		g.Add(r.ID, r.ShimGroup)
	}
	return g, nil
}

// build constructs every component in dependency order.
func (d *daemon) build(boot string, cg *cgroups.Manager, netw *network.Manager) {
	allocatable, enforced := d.res.Allocatable, d.res.Enforced
	d.hostIP = hostIP()
	d.dns = newClusterDNS(context.Background(), d.cfg, netw, d.log)
	if d.dns == nil {
		if err := netw.RemoveServices(); err != nil { // what a run with virtual IPs left
			d.log.Warn("remove Service virtual IPs", "err", err)
		}
	}
	limits := hostLimits()
	limits.CgroupV2 = cg.Mode() == cgroups.ModeUnified
	self, _ := os.ReadFile("/proc/self/cgroup")
	limits.SwapController = swapControllerAvailable("/sys/fs/cgroup", limits.CgroupV2, string(self))
	limits.AppArmor = apparmor.HostSupports() // as containerd's CRI decides it
	limits.Allocatable = allocatable
	limits.Hostname, _ = os.Hostname()
	limits.NodeName = d.nodeName
	limits.ClusterDomain = d.cfg.ClusterDomain
	limits.SeccompRoot = filepath.Join(d.cfg.StateDir, "seccomp") // the kubelet's <root-dir>/seccomp
	limits.SeccompDefault = d.cfg.SeccompDefault
	rro := &featureCache{ask: func() (bool, error) { return recursiveReadOnlyMounts(context.Background(), d.rt, d.log) }}
	limits.RecursiveReadOnlyMounts = rro.get
	d.cg, d.metrics = cg, metrics.New()
	d.statuses = status.NewManager(d.db, status.ManagerOptions{Logger: d.log})
	d.rt.SetEventRecorder(d.statuses.Event)
	d.prober = prober.New(prober.Options{Exec: d.rt, Recorder: d.statuses, Logger: d.log})
	d.cache = podcache.New(d.rt, nil)
	data := configdata.NewStore(d.sourceScope) // ConfigMaps and Secrets of the manifests, in memory only
	d.data = data
	vols := volumes.New(statedir.PodsDir(d.cfg.StateDir))
	vols.Data, vols.Allocatable = data, allocatable
	if d.quotas = d.newQuotas(); d.quotas != nil {
		vols.Quotas = d.quotas
	}
	var images syncer.Runtime = meteredRuntime{d.rt, d.metrics}
	if d.images != nil {
		images = verifiedImages{images, d.images}
	}
	vols.Images = imageVolumes{images: images, rt: d.rt}
	unsCfg, unsMgr := d.userNamespaces()
	d.syncer = syncer.New(syncer.Config{
		LogDir: d.cfg.LogDir, BootID: boot, HostIP: d.hostIP, MemoryCapacity: memoryCapacity(), HostLimits: limits, Data: data,
		CrashLoopBackOffMax: d.cfg.CrashLoopBackOffMax, UserNSUnsupported: unsCfg, ServiceEnv: d.podServiceEnv,
	}, syncer.Deps{
		Runtime: images, Cache: d.cache, Sandboxes: sandbox.NewManager(d.cfg.RunDir, sandbox.WithLogger(d.log), sandbox.WithRecorder(d.statuses.Event),
			sandbox.WithClusterDomain(d.cfg.ClusterDomain), sandbox.WithPause(podhostExecutable()), sandbox.WithClusterDNS(d.dns.nameservers()...),
			sandbox.WithPodDNS(d.podDNS)),
		Network: meteredNetwork{netw, d.metrics}, Cgroups: cg,
		Volumes: vols, Store: d.db, Observer: d.statuses,
		Prober: d.prober, Hooks: lifecycle.NewRunner(d.rt, nil), ShimGroups: d.shims, PodLogs: podLogs(d.cfg.LogDir, d.rt.LogDriver), Logger: d.log,
		UserNS: unsMgr,
	})
	d.workers = podworkers.New(newMeteredHandler(d.syncer, d.metrics, d.statuses), podworkers.Options{Store: d.db, Cache: d.cache, Logger: d.log, ResyncInterval: d.cfg.ResyncPeriod,
		OnFinished: func(uid types.UID) { d.mgr.WorkerFinished(uid) }}) // d.mgr is set below, before any worker runs
	logGC := &gc.Collector{Root: d.cfg.LogDir, Log: d.log,
		Policy: gc.Policy{MaxFiles: d.cfg.LogMaxFiles, MaxTotal: d.cfg.LogDirMaxSize}}
	d.mgr = manager.New(manager.Deps{Workers: d.workers, Runtime: cachedLists{d.rt, d.cache}, Store: d.db, Statuses: d.statuses, Cleaner: d.syncer, QOSCgroups: cg, Logs: logGC, Data: data, Identities: d.db},
		manager.Options{Allocatable: allocatable, EnforcedAllocatable: enforced, NodeName: d.nodeName,
			NodeLabels: admission.NodeLabels(d.nodeName, d.cfg.NodeLabels), AppArmor: limits.AppArmor, Logger: d.log,
			Admit: evictionAdmit{d}}) // d.eviction is set below, before any pod is admitted
	d.eviction = d.newEviction()
}

// serve runs the long-running loops in one errgroup until ctx is done or
// one of them fails, and waits for all of them.
func (d *daemon) serve(ctx context.Context) error {
	prev, err := previouslyAdmitted(d.db)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	merged := make(chan source.Snapshot, 1)
	events := make(chan pleg.PodEvent, 128)
	if err := d.runSources(gctx, g, merged); err != nil {
		return err
	}
	snaps := d.runRollout(gctx, g, d.runRolling(gctx, g, d.dns.tap(gctx, g, merged)))
	g.Go(func() error {
		pleg.New(d.rt, pleg.Options{Cache: d.cache, Logger: d.log}).Run(gctx, events)
		return nil
	})
	images, imagesAdded := d.runImagesDir(gctx, g)
	g.Go(func() error {
		select { // the images directory is imported before any pod syncs
		case <-images.Ready():
		case <-gctx.Done():
			return nil
		}
		d.mgr.Run(gctx, manager.Inputs{Snapshots: snaps, Events: events, ProbeUpdates: d.prober.Updates(), ImagesAdded: imagesAdded,
			PrevAdmitted: prev, Housekeeping: housekeepingPeriod, Heartbeat: d.heartbeat})
		return nil
	})
	shutdown, closeLogind := d.newShutdownManager()
	defer closeLogind()
	g.Go(func() error { return shutdown.Run(gctx) })
	g.Go(func() error { d.statuses.Run(gctx); return nil })
	g.Go(func() error { d.imageGC().Run(gctx, imageGCPeriod); return nil })
	d.runEviction(gctx, g)
	g.Go(func() error { footprint.Reaper{After: d.statuses.Ready(), Logger: d.log}.Run(gctx); return nil })
	health := rthealth.New(d.cfg.ContainerdAddress, rthealth.SocketProbe(d.cfg.ContainerdAddress, func(ctx context.Context) error {
		_, err := d.rt.Client().Version(ctx) // no wait-for-ready: fails fast while containerd is down
		return err
	}), rthealth.Options{Logger: d.log, Answered: d.rt.LastAnswered})
	g.Go(func() error { health.Run(gctx); return nil })
	stateHealth := newStateHealth(d.db, d.log)
	g.Go(func() error { stateHealth.Run(gctx, stateProbePeriod); return nil })
	b := &backend{mgr: d.mgr, images: images, st: d.statuses, logDir: d.cfg.LogDir, rt: d.rt, sandboxes: d.db, events: d.db, views: newPodViews(d.statuses, d.nodeName), health: health, state: stateHealth,
		node: d.nodeSource(health, d.eviction.Conditions)}
	d.metrics.Register(metrics.NewPodsCollector(b.Pods), metrics.NewCgroupCollector(b.Pods, d.cg))
	if d.quotas != nil {
		d.metrics.Register(metrics.NewEmptyDirQuotas(d.quotas.Count))
	}
	g.Go(func() error { d.expireEvents(gctx, b, eventExpiryPeriod); return nil })
	d.dns.run(gctx, g, b)
	srv := api.NewServer(b, d.log)
	srv.EnableObserve(observeBackend{backend: b, metrics: d.metrics, stats: d.cg})
	srv.EnableRollout(rolloutBackend{d.rollout})
	srv.EnableWorkloads(workloadsBackend{d.rolling})
	srv.EnableGrace(graces{d: d, b: b})
	d.startKubeAPI(gctx, g, b, srv)
	g.Go(func() error { return srv.Listen(gctx, d.cfg.Socket) })
	if d.cfg.MetricsAddress != "" {
		g.Go(func() error { return serveMetrics(gctx, d.cfg.MetricsAddress, d.metrics.Handler()) })
	}
	g.Go(func() error {
		select {
		case <-d.statuses.Ready():
			d.log.Info("first sync complete; ready")
			notify(sddaemon.SdNotifyReady, "STATUS=running")
		case <-gctx.Done():
		}
		return nil
	})
	<-gctx.Done()
	notify(sddaemon.SdNotifyStopping)
	d.log.Info("stopping podhost; pods keep running")
	return g.Wait()
}

// nodeSource serves GET /v1/node: this machine as the manager sees it
// (the node name, labels and allocatable it admits pods with), its
// Ready condition containerd's health.
func (d *daemon) nodeSource(health *rthealth.Monitor, pressure func() []corev1.NodeCondition) *nodeSource {
	name := d.nodeName
	n := newNodeSource(nodeSpec{name: name, labels: admission.NodeLabels(name, d.cfg.NodeLabels),
		capacity: d.res.Capacity, allocatable: d.res.Allocatable, hostIP: d.hostIP, hostname: name}, hostNodeFiles, d.started)
	n.health, n.pressure = health.Status, pressure
	n.runtimeVersion = func(ctx context.Context) (string, error) {
		v, err := d.rt.Client().Version(ctx)
		return v.Version, err
	}
	return n
}

// close shuts down what build made, in reverse order: the pod workers
// (in-flight syncs cancelled, bounded), the prober, the container stops
// still in flight, and the last flush of statuses and events. The caller
// closes containerd and the db after it.
func (d *daemon) close() {
	ctx, cancel := context.WithTimeout(context.Background(), workersShutdownTimeout)
	defer cancel()
	if err := d.workers.Shutdown(ctx); err != nil {
		d.log.Warn("pod workers did not stop in time", "err", err)
	}
	d.prober.Close()
	d.syncer.Close()
	d.statuses.Flush() // last: the prober and the stops in flight record events
}

func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func notify(states ...string) {
	for _, s := range states {
		_, _ = sddaemon.SdNotify(false, s)
	}
}

// podLogs removes the log directories of deleted pods, never while a log
// driver still writes there: one running the driver the shims are given
// now, or one of the default ones (a driver a previous podhost started).
func podLogs(logDir, driver string) logs.Remover {
	return logs.Remover{Root: logDir, Comms: logs.DriverComms(append([]string{driver}, logs.DefaultDrivers...)...)}
}
