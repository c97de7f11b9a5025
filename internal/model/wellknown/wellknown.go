// Package wellknown holds every podhost.io/ label and annotation key podhost
// reads or writes (on containerd containers, leases, snapshots and pods) and
// the parsing of their values: the one place a new key is added.
package wellknown

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
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
// (internal/desired/order).
const AnnotationAfter = "podhost.io/after"

// AnnotationRollbackAfter is set by the user: a Go duration ("2m"). When an
// edit of the manifest replaces the pod and the new version is not Ready
// within it, podhost brings the previous version back (internal/desired/rollout).
// "0" turns the daemon's rollbackAfter default off for the pod.
const AnnotationRollbackAfter = "podhost.io/rollback-after"

// Annotations podhost sets on a pod it brought back in place of a newer
// version (internal/desired/rollout): the newer version's config hash, and why.
const (
	AnnotationRolledBackFrom   = "podhost.io/rolled-back-from"
	AnnotationRolledBackReason = "podhost.io/rolled-back-reason"
)

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
	// LabelStdin is "true" for a container with stdin (and a terminal):
	// its console reads the FIFO beside its log file, which attach writes
	// (internal/host/runtime StdinPath).
	LabelStdin = "podhost.io/stdin"
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
	// LabelImageVolumes marks the containerd lease that holds a pod's image
	// volume snapshots; its value is the pod UID.
	LabelImageVolumes = "podhost.io/image-volumes"
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
	// LabelUserNS is the user namespace mapping of a container of a pod
	// with hostUsers: false, "<hostID>:<size>" (internal/kubelet/userns
	// Label): the state db's range is rebuilt from it after a db loss.
	LabelUserNS = "podhost.io/userns"
	// AnnotationWarnings carries manifest warnings (e.g. "file turned invalid;
	// running the last good version") on pods the API returns.
	AnnotationWarnings = "podhost.io/warnings"
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

// LabelImageLastUsed is the image label recording when a container was
// last created from the image (RFC 3339), for image GC's least recently
// used order. It survives podhost restarts, unlike the kubelet's memory.
const LabelImageLastUsed = "podhost.io/last-used"

// LabelImagePinned is the image label that keeps an image from image GC
// and `images prune`, naming where it came from: "images-dir:<file>" for
// an image imported from the images directory (config imagesDir).
const LabelImagePinned = "podhost.io/pinned"

// LabelSignatureFor is set by an import on the containerd image record of
// a Sigstore bundle referrer (an OCI artifact whose subject is an image):
// the subject's digest. Image signature verification finds an archive's
// signatures by it (internal/host/imagesig), with no registry.
const LabelSignatureFor = "podhost.io/signature-for"

// PinnedImagesDir is the prefix of LabelImagePinned for images from the
// images directory: "images-dir:" + the archive's file name.
const PinnedImagesDir = "images-dir:"

// LabelImagesDirImport records which version of an images-dir archive an
// image came from: "<inode>.<size>.<mtime ns>.<ctime ns>/<images>", the
// archive's stat at import and how many images it yielded. A boot that
// finds every image of an archive with the archive's current stamp skips
// it without reading it.
const LabelImagesDirImport = "podhost.io/images-dir-import"

// AnnotationResizePending is set by the manager on the pod it hands to the
// worker when the manifest asks for resources that were not allocated:
// "<reason>: <message>" with reason Infeasible or Deferred (condition
// PodResizePending). It is never in a manifest.
const AnnotationResizePending = "podhost.io/resize-pending"

// ServiceEnvPrefix starts the name of the ConfigMap podhost-cluster puts
// in the file of a pod from the cluster's API server with the pod's
// Kubernetes service variables (the kubelet's KUBERNETES_SERVICE_HOST,
// ..., from the cluster's Services; enableServiceLinks applied): the
// daemon sets them in its containers instead of podhost's own Services'.
const ServiceEnvPrefix = "podhost-service-env-"

// ServiceEnvConfigMap names that ConfigMap for the pod of UID uid.
func ServiceEnvConfigMap(uid string) string {
	h := sha256.Sum256([]byte(uid))
	return ServiceEnvPrefix + hex.EncodeToString(h[:12])
}
