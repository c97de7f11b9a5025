// Package podstate is podhost's shared vocabulary for what the runtime
// observed: pods and containers as containerd (plus our labels) report them.
// Producers: runtime (list/inspect), pleg. Consumers: syncer, status,
// podworkers housekeeping. It holds plain data only: no I/O, no logic beyond
// small lookups.
package podstate

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Labels podhost sets on every containerd container. They are the recovery
// truth for what runs (see docs/ARCHITECTURE.md).
const (
	LabelPodUID        = "podhost.io/pod-uid"
	LabelPodName       = "podhost.io/pod-name"
	LabelPodNamespace  = "podhost.io/pod-namespace"
	LabelContainerName = "podhost.io/container-name"
	LabelSandboxID     = "podhost.io/sandbox-id"
	LabelSpecHash      = "podhost.io/spec-hash"
	// LabelIdentityHash is the pod's identity hash when the container was
	// created: a running container whose label differs from the desired
	// pod's identity is replaced (absent on containers of older versions).
	LabelIdentityHash = "podhost.io/identity-hash"
	LabelRestartCount = "podhost.io/restart-count"
	LabelAttempt      = "podhost.io/attempt"
	// LabelInit marks an init container ("true").
	LabelInit = "podhost.io/init"
	// LabelPreStop is the container's preStop handler (compact JSON, named
	// port resolved), recorded at create time so that a stop without the
	// pod spec (an orphan after a podhost restart) still runs it.
	LabelPreStop = "podhost.io/prestop"
	// LabelResources is the container's cpu/memory requests and limits as
	// actuated (compact JSON of a ResourceRequirements): set at create,
	// rewritten by an in-place resize after the task update succeeded.
	LabelResources = "podhost.io/resources"
)

// Annotations podhost sets on desired pods (like kubelet's kubernetes.io/config.*).
const (
	AnnotationConfigHash   = "podhost.io/config-hash"   // spec hash of the user's manifest
	AnnotationConfigSource = "podhost.io/config-source" // file (or URL) the pod came from
	// AnnotationIdentityHash is the identity hash of the user's manifest:
	// the spec hash without the paths an edit may change in place
	// (manifest.MutablePaths). Derived UIDs come from it.
	AnnotationIdentityHash = "podhost.io/identity-hash"
)

// AnnotationAfter is set by the user: a comma-separated list of pod names
// in the pod's namespace that must be Ready before podhost admits and
// starts the pod, and that outlive it when they are removed together
// (internal/order).
const AnnotationAfter = "podhost.io/after"

// AnnotationRollbackAfter is set by the user: a Go duration ("2m"). When an
// edit of the manifest replaces the pod and the new version is not Ready
// within it, podhost brings the previous version back (internal/rollout).
// "0" turns the daemon's rollbackAfter default off for the pod.
const AnnotationRollbackAfter = "podhost.io/rollback-after"

// Annotations podhost sets on a pod it brought back in place of a newer
// version (internal/rollout): the newer version's config hash, and why.
const (
	AnnotationRolledBackFrom   = "podhost.io/rolled-back-from"
	AnnotationRolledBackReason = "podhost.io/rolled-back-reason"
)

// ParseRollbackAfter parses a podhost.io/rollback-after value: a Go
// duration, not negative.
func ParseRollbackAfter(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as 2m: %w", err)
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative, got %s", v)
	}
	return d, nil
}

// ContainerState is the runtime state of one container.
type ContainerState string

const (
	StateCreated ContainerState = "created"
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

// Container is one containerd container that carries our labels.
type Container struct {
	ID           string
	Name         string // k8s container name
	Init         bool
	Image        string
	ImageRef     string // digest, when known
	Hash         string // hash of the container's spec (computed by syncer) at creation
	SandboxID    string
	RestartCount int
	Attempt      int
	State        ContainerState
	PID          uint32
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	Reason       string // "OOMKilled", "Error", "Completed" for exited containers
	Message      string
	Labels       map[string]string
}

// Pod is everything the runtime holds for one pod UID.
type Pod struct {
	UID        types.UID
	Name       string
	Namespace  string
	Containers []*Container
}

// FullName returns namespace/name.
func (p *Pod) FullName() string { return p.Namespace + "/" + p.Name }

// Find returns the newest container with the given name (by Attempt, then
// CreatedAt), or nil.
func (p *Pod) Find(name string) *Container {
	var best *Container
	for _, c := range p.Containers {
		if c.Name != name {
			continue
		}
		if best == nil || c.Attempt > best.Attempt ||
			(c.Attempt == best.Attempt && c.CreatedAt.After(best.CreatedAt)) {
			best = c
		}
	}
	return best
}

// Has reports whether the pod has container id.
func (p *Pod) Has(id string) bool {
	for _, c := range p.Containers {
		if c.ID == id {
			return true
		}
	}
	return false
}

// Running returns the containers in StateRunning.
func (p *Pod) Running() []*Container {
	var out []*Container
	for _, c := range p.Containers {
		if c.State == StateRunning {
			out = append(out, c)
		}
	}
	return out
}

// Labels the runtime keeps on containers, leases and snapshots for
// itself, and keys the syncer and the API add. Every podhost.io/ key is
// defined here, once.
const (
	// LabelStopSignal is the container's stop signal, recorded at create
	// time: the pod's lifecycle.stopSignal (set by the syncer), else the
	// image's STOPSIGNAL (set by the runtime).
	LabelStopSignal = "podhost.io/stop-signal"
	// LabelLogPath is where the task's log driver writes (CRI format).
	LabelLogPath = "podhost.io/log-path"
	// LabelShimGroup is the container's shim group (its spec's
	// io.containerd.runc.v2.group annotation; set by the runtime).
	LabelShimGroup = "podhost.io/shim-group"
	// LabelTerminal is "true" when the container's spec asks for a
	// terminal (its tty field; set by the runtime): its task is created
	// with one.
	LabelTerminal = "podhost.io/terminal"
	// LabelImageDigest is the digest of the image the container runs.
	LabelImageDigest = "podhost.io/image-digest"
	// LabelStartedAt is set (RFC3339Nano) right after the task started:
	// containerd keeps no start time.
	LabelStartedAt = "podhost.io/started-at"
	// LabelOOM is set to "true" when containerd reported an OOM kill in the
	// container (survives podhost and containerd restarts).
	LabelOOM = "podhost.io/oom"
	// LabelExitCode and LabelFinishedAt record a container's exit when
	// podhost first sees it stopped, before it deletes the task (and its
	// exit status; a host reboot loses it too): a finished pod must stay
	// Succeeded.
	LabelExitCode   = "podhost.io/exit-code"
	LabelFinishedAt = "podhost.io/finished-at"
	// LabelLease marks podhost's leases ("true").
	LabelLease = "podhost.io/lease"
	// LabelLeaseOwner is "<pid>-<process start time in ticks>" of the
	// process that took the lease.
	LabelLeaseOwner = "podhost.io/lease-owner"
	// LabelSnapshotContainer is set on a container's rootfs snapshot to the
	// container ID.
	LabelSnapshotContainer = "podhost.io/container"
	// LabelTerminationLog is the host path of the container instance's
	// termination-log file (bind-mounted at terminationMessagePath);
	// LabelTerminationPolicy is the container's terminationMessagePolicy.
	// The runtime reads the message from them once the container exited.
	LabelTerminationLog    = "podhost.io/termination-log"
	LabelTerminationPolicy = "podhost.io/termination-message-policy"
	// LabelGracePeriod records the pod's termination grace period on each
	// container so orphans (no manifest any more) still stop gracefully.
	LabelGracePeriod = "podhost.io/termination-grace-period"
	// AnnotationWarnings carries manifest warnings (e.g. "file turned invalid;
	// running the last good version") on pods the API returns.
	AnnotationWarnings = "podhost.io/warnings"
)
