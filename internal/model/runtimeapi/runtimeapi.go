// Package runtimeapi holds the runtime-neutral types podhost's core
// (syncer, pleg, manager) uses to talk to the containerd adapter
// (internal/host/runtime): images, container configs, task events and the
// errors callers test with errors.Is. It imports no containerd client, so
// the core packages do not either (`go list -deps` checks it).
package runtimeapi

import (
	"errors"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"time"

	"github.com/containerd/containerd/v2/pkg/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Errors callers test with errors.Is.
var (
	// ErrImageNeverPull: the image is absent and the pull policy is Never.
	ErrImageNeverPull = errors.New("image not present with pull policy Never")
	// ErrImagePull: pulling (or unpacking) the image failed.
	ErrImagePull = errors.New("image pull failed")
	// ErrInvalidImageName: the image reference does not parse.
	ErrInvalidImageName = errors.New("invalid image name")
	// ErrImageSignature: the image policy (config imagePolicy) requires a
	// signature the image does not carry (internal/host/imagesig).
	ErrImageSignature = errors.New("image signature verification failed")
)

// SignatureBundle is a Sigstore bundle (application/vnd.dev.sigstore.bundle.v0.3+json)
// found for an image digest: an OCI referrer of the image in its registry
// or in containerd's content store (an archive's).
type SignatureBundle struct {
	Source string // where it came from: "registry referrer sha256:…", "local referrer sha256:…"
	Data   []byte
}

// Artifact is an OCI artifact a registry serves (Runtime.FetchArtifact):
// its manifest and the blobs it names, each checked against its
// descriptor's size and digest.
type Artifact struct {
	Digest   string // the manifest's
	Manifest ocispec.Manifest
	Config   []byte
	Layers   [][]byte // in the manifest's order
}

// Image is an image available in the namespace, unpacked.
type Image struct {
	Ref    string // normalized name, e.g. docker.io/library/busybox:1.36
	Digest string // digest of the image's target (manifest or index)
	Config ocispec.ImageConfig
	Size   int64 // content size
	// LastUsed: last container created from it, else its last pull/import
	// (ListImages only; image GC's order).
	LastUsed time.Time
	// Pinned is the image's podhost.io/pinned label (ListImages only):
	// where it came from ("images-dir:app.tar"); image GC never removes
	// a pinned image.
	Pinned string
	// Pulled is set by EnsureImage when this call fetched the image from
	// its registry (not when it was already present).
	Pulled bool
}

// ContainerConfig describes a container to create.
type ContainerConfig struct {
	ID    string
	Image Image // from EnsureImage / ImportImage / ListImages
	// Labels must include wellknown.LabelPodUID (ListPods finds containers
	// by it); the runtime adds its own labels.
	Labels map[string]string
	// SpecOpts build the OCI spec on top of containerd's default spec. They
	// run after the container's rootfs snapshot is prepared, so options that
	// read the image's rootfs (oci.WithUser*, WithAdditionalGIDs) work.
	// Nothing is derived from the image config here: the options must set
	// args, env, cwd and user themselves.
	SpecOpts []oci.SpecOpts
	// LogPath is the CRI log file for the task's stdout/stderr ("" = none).
	LogPath string
	// Snapshotter overrides the runtime's snapshotter.
	Snapshotter string
	// SystemdCgroup makes runc use its systemd cgroup driver (the spec's
	// cgroupsPath is then "slice:prefix:name").
	SystemdCgroup bool
	// UserNS, for a container in its pod's user namespace, is the
	// namespace's mapping (uids and gids alike): the rootfs snapshot is
	// prepared for it (snapshot labels containerd.io/snapshot/uidmapping
	// and gidmapping, as CRI's snapshotterRemapOpts: overlayfs mounts the
	// layers idmapped, other snapshotters get a chowned copy).
	UserNS []specs.LinuxIDMapping
}

// Event types.
const (
	EventExit  = "exit"
	EventOOM   = "oom"
	EventStart = "start"
	// EventRelist has no container: the subscription was re-established
	// (containerd restarted?) and events may have been missed, so consumers
	// must list everything again.
	EventRelist = "relist"
)

// Event is a task event of a container in podhost's namespace. Exec
// processes' exits are not reported.
type Event struct {
	ContainerID string
	Type        string // Event*
	ExitCode    uint32 // EventExit only
	Time        time.Time
}

// TerminalSize is the size of an exec's terminal, in characters: the
// resizes a TTY exec's client sends (kubectl exec -t).
type TerminalSize struct {
	Width, Height uint16
}
