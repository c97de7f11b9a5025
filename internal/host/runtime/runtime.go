// Package runtime is podhost's containerd adapter: images (pull, import),
// containers, tasks, exec, labels and events, all in one containerd
// namespace (default "podhost"). It decides no policy: the syncer does.
//
// Containers carry podhost's labels (wellknown.Label*, see docs/ARCHITECTURE.md) plus
// the runtime's own (Label* below). An exited container's task is deleted
// as soon as the runtime sees it stopped, once its exit code and time are
// recorded in the container's labels (reap.go), so the shim closes the
// container's log pipes; containerd's restart monitor labels are never
// set.
package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"golang.org/x/sync/singleflight"
)

// DefaultNamespace is the containerd namespace podhost uses.
const DefaultNamespace = "podhost"

// ShimGroupAnnotation groups all containers of a pod into one shim
// (see docs/ARCHITECTURE.md). CreateContainer sets it to the sandbox id (else the
// pod UID) unless the spec options already did.
const ShimGroupAnnotation = "io.containerd.runc.v2.group"

// Errors callers test with errors.Is.
var (
	ErrImageNeverPull   = runtimeapi.ErrImageNeverPull
	ErrImagePull        = runtimeapi.ErrImagePull
	ErrInvalidImageName = runtimeapi.ErrInvalidImageName
	// ErrNotFound is containerd's not-found; errors.Is works on both.
	ErrNotFound = errdefs.ErrNotFound
)

// Options configure a Runtime (Connect); zero values take the defaults.
type Options struct {
	// Snapshotter for image unpacking and container rootfs (default
	// "overlayfs").
	Snapshotter string
	// LogDriver is the binary the shim runs as the log driver; default
	// podhost-log-driver beside os.Executable(); a missing binary falls back
	// to os.Executable() (`podhost log-driver`) with a warning.
	LogDriver string
	// LogMaxSize / LogMaxFiles configure log rotation (logs.Default*).
	LogMaxSize  int64
	LogMaxFiles int
	// HostsDir is containerd's registry hosts dir (certs.d layout). Default
	// /etc/containerd/certs.d.
	HostsDir string
	// AuthFiles are docker config.json files searched in order for registry
	// credentials. nil: DefaultAuthFiles(); empty: none.
	AuthFiles []string
	// RuntimeRequestTimeout bounds one task create (default
	// DefaultRuntimeRequestTimeout); one that runs out kills its group's
	// shim (killWedgedShim).
	RuntimeRequestTimeout time.Duration
	Logger                *slog.Logger
}

// DefaultRuntimeRequestTimeout is the kubelet's default
// runtime-request-timeout.
const DefaultRuntimeRequestTimeout = 2 * time.Minute

// Runtime talks to one containerd in one namespace. Its exported fields
// are the settings Connect took from Options: read them, do not change
// them once the Runtime is in use.
type Runtime struct {
	// Snapshotter for image unpacking and container rootfs (default
	// "overlayfs").
	Snapshotter string
	// LogDriver is the binary the shim runs as the log driver
	// (`<LogDriver> log-driver <args>`), resolved by Connect (see
	// Options.LogDriver).
	LogDriver string
	// LogMaxSize / LogMaxFiles configure log rotation (logs.Default*).
	LogMaxSize  int64
	LogMaxFiles int
	// HostsDir is containerd's registry hosts dir (certs.d layout:
	// <dir>/<host>/hosts.toml, *.crt, ...). Default /etc/containerd/certs.d.
	HostsDir string
	// AuthFiles are docker config.json files searched in order for registry
	// credentials. Default DefaultAuthFiles().
	AuthFiles []string
	// RuntimeRequestTimeout bounds one task create (see Options).
	RuntimeRequestTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	client *client.Client
	ns     string
	closed atomic.Bool // event loops stop once the client is closed

	images sync.Map // manifest digest|snapshotter -> Image, for unpacked images
	// describing: one check-unpack-and-describe per image at a time (a cold
	// start asks for one image from every pod at once).
	describing singleflight.Group
	touched    sync.Map // image name -> when this process last wrote its LabelImageLastUsed

	groupCreates groupLocks // one task create at a time per shim group
	shims        procShims  // finds a wedged group's shim (wedge.go)
	recorder     recorderPtr

	oomMu sync.Mutex
	oom   map[string]bool // container id -> OOM seen (until removed)

	termMu   sync.Mutex
	termMsgs map[string]string // container id -> termination message of the exited container

	// Reaps of exited tasks (reap.go).
	reaper       reapOps            // containerdReap; unit tests fake it
	reapFlight   singleflight.Group // one reap per container id at a time; callers join it
	reapLocks    groupLocks         // container id: a reap or RemoveContainer's task delete
	reapSlots    chan struct{}      // background reaps running
	reapsMu      sync.Mutex
	reapsDone    bool           // Close began: no new reap
	reapsClosing chan struct{}  // closed by Close: queued reaps give up
	reaps        sync.WaitGroup // reaps started, for Close
	exitMu       sync.Mutex
	exits        map[string]exitRecord  // container id -> first exit seen (TaskExit, a reap), until RemoveContainer
	reapFails    map[string]reapFailure // container id -> back-off after a failed reap

	owner    string // wellknown.LabelLeaseOwner of this process's leases
	answers  *answerClock
	inflight sync.Map // lease IDs and container IDs of creates in progress
}

// Connect connects to containerd at address and waits until it serves,
// retrying with backoff until ctx is done.
func Connect(ctx context.Context, address, namespace string, opts Options) (*Runtime, error) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	answers := &answerClock{}
	c, err := client.New(address, client.WithDefaultNamespace(namespace), client.WithTimeout(2*time.Second),
		client.WithExtraDialOpts(answers.dialOpts()))
	if err != nil {
		return nil, fmt.Errorf("containerd client %s: %w", address, err)
	}
	r := newRuntime(c, namespace, answers)
	r.shims.address = strings.TrimPrefix(address, "unix://")
	r.apply(opts)
	if err := r.waitServing(ctx, address); err != nil {
		c.Close()
		return nil, err
	}
	return r, nil
}

func newRuntime(c *client.Client, namespace string, answers *answerClock) *Runtime {
	r := &Runtime{
		Snapshotter:  "overlayfs",
		LogMaxSize:   10 << 20,
		LogMaxFiles:  5,
		HostsDir:     "/etc/containerd/certs.d",
		AuthFiles:    DefaultAuthFiles(),
		client:       c,
		ns:           namespace,
		oom:          map[string]bool{},
		termMsgs:     map[string]string{},
		owner:        processOwner(),
		answers:      answers,
		reapSlots:    make(chan struct{}, reapConcurrency),
		reapsClosing: make(chan struct{}),
		exits:        map[string]exitRecord{},
		reapFails:    map[string]reapFailure{},
		shims:        procShims{procRoot: "/proc", runcRoot: defaultRuncRoot, namespace: namespace},
	}
	r.reaper = containerdReap{r}
	return r
}

func (r *Runtime) apply(o Options) {
	if o.Snapshotter != "" {
		r.Snapshotter = o.Snapshotter
	}
	if o.LogMaxSize > 0 {
		r.LogMaxSize = o.LogMaxSize
	}
	if o.LogMaxFiles > 0 {
		r.LogMaxFiles = o.LogMaxFiles
	}
	if o.HostsDir != "" {
		r.HostsDir = o.HostsDir
	}
	if o.AuthFiles != nil {
		r.AuthFiles = o.AuthFiles
	}
	if o.RuntimeRequestTimeout > 0 {
		r.RuntimeRequestTimeout = o.RuntimeRequestTimeout
	}
	r.Logger = o.Logger
	exe, _ := os.Executable()
	r.LogDriver = resolveLogDriver(o.LogDriver, exe, isExecutable, r.log())
}

func (r *Runtime) waitServing(ctx context.Context, address string) error {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok, err := r.client.IsServing(actx)
		cancel()
		if err == nil && ok {
			return nil
		}
		if attempt == 1 || attempt%10 == 0 {
			r.log().Warn("containerd not reachable yet, retrying", "address", address, "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd at %s: %w (last error: %v)", address, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// Close waits a moment for task deletes running (closeReaps), then closes
// the client and ends Events subscriptions. Containers keep running.
func (r *Runtime) Close() error {
	r.closed.Store(true)
	r.closeReaps()
	return r.client.Close()
}

// Namespace returns the containerd namespace in use.
func (r *Runtime) Namespace() string { return r.ns }

// Client returns the underlying containerd client (for preflight checks).
func (r *Runtime) Client() *client.Client { return r.client }

func (r *Runtime) nsctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.ns)
}

func (r *Runtime) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

func (r *Runtime) snapshotter(override string) string {
	if override != "" {
		return override
	}
	if r.Snapshotter != "" {
		return r.Snapshotter
	}
	return "overlayfs"
}
