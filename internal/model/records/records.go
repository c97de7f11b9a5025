// Package records holds the records podhost persists in its state db
// (internal/host/state, bbolt) as plain types, so the packages that use them
// (the engine, the desired state) do not link bbolt.
package records

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Worker phases (podworkers), as stored in WorkerRecord.Phase.
const (
	PhaseSyncing     = "syncing"
	PhaseTerminating = "terminating"
	PhaseTerminated  = "terminated"
)

// Sandbox states, as stored in SandboxRecord.State.
const (
	SandboxCreating = "Creating"
	SandboxReady    = "Ready"
	SandboxRemoving = "Removing"
)

// WorkerRecord is the persisted phase of one pod worker, so a restarted
// daemon knows which pods were terminating and with which grace period.
type WorkerRecord struct {
	UID         types.UID `json:"uid"`
	FullName    string    `json:"fullName"`
	Phase       string    `json:"phase"` // PhaseSyncing | PhaseTerminating | PhaseTerminated
	GracePeriod int64     `json:"gracePeriod,omitempty"`
	Pod         []byte    `json:"pod,omitempty"` // JSON of the last desired *corev1.Pod
	UpdatedAt   time.Time `json:"updatedAt"`
}

// HostPort is one host port an admitted pod holds.
type HostPort struct {
	HostIP   string `json:"hostIP,omitempty"`
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
}

// Allocation is the admission checkpoint of one pod: what it was granted.
type Allocation struct {
	UID       types.UID           `json:"uid"`
	FullName  string              `json:"fullName"`
	Requests  corev1.ResourceList `json:"requests,omitempty"`
	HostPorts []HostPort          `json:"hostPorts,omitempty"`
	// Containers are the resources allocated to each container (init
	// ones included), by name: the truth of an in-place resize (the pod's
	// worker runs the pod with these, whatever its manifest asks). Nil in
	// checkpoints written before podhost resized pods.
	Containers map[string]corev1.ResourceRequirements `json:"containers,omitempty"`
}

// PortMapping is one CNI portmap entry of a sandbox.
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// SandboxRecord is written (State Creating) before any namespace is pinned
// or CNI is called, so teardown works after crashes and reboots.
type SandboxRecord struct {
	ID        string        `json:"id"`
	PodUID    types.UID     `json:"podUID"`
	FullName  string        `json:"fullName"`
	State     string        `json:"state"` // SandboxCreating | SandboxReady | SandboxRemoving
	NetNS     string        `json:"netNS,omitempty"`
	IPC       string        `json:"ipc,omitempty"`
	UTS       string        `json:"uts,omitempty"`
	Dir       string        `json:"dir,omitempty"`
	CNIResult []byte        `json:"cniResult,omitempty"`
	IPs       []string      `json:"ips,omitempty"`
	Ports     []PortMapping `json:"ports,omitempty"`
	Cgroup    string        `json:"cgroup,omitempty"`
	// ShimGroup is the containerd shim group of the pod's containers
	// (internal/host/shimgroup); "" in records older than it: the sandbox ID.
	ShimGroup string `json:"shimGroup,omitempty"`
	// User is the pinned user namespace of a pod with hostUsers: false
	// (it owns NetNS, IPC and UTS) and UserNS the range it maps.
	User   string        `json:"user,omitempty"`
	UserNS *UserNSRecord `json:"userNS,omitempty"`
	// PID is the pinned PID namespace of a pod with shareProcessNamespace:
	// true (its PID 1 is recorded beside it, internal/host/sandbox).
	PID       string    `json:"pid,omitempty"`
	BootID    string    `json:"bootID,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// MaxEventsPerPod and MaxEventBytesPerPod cap the events kept per pod
// (after aggregation, see AddEvent); the oldest are dropped.
const (
	MaxEventsPerPod     = 100
	MaxEventBytesPerPod = 64 << 10
)

// maxEventMessage bounds one event's message (a probe's output may be
// long): a quarter of what a pod's events may weigh.
const maxEventMessage = MaxEventBytesPerPod / 4

// Event is one pod event (kubectl describe's Events section). A repeated
// event is one Event with a Count, as the kubelet's event recorder
// aggregates it (and kubectl shows "(x95 over 3m)").
type Event struct {
	Time    time.Time `json:"time"` // the last occurrence (lastTimestamp)
	Type    string    `json:"type"` // Normal | Warning
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	// First is the first occurrence (firstTimestamp); zero: Time.
	First time.Time `json:"first,omitzero"`
	// Count is the number of occurrences; 0 and 1: once.
	Count int32 `json:"count,omitempty"`
}

// Same reports whether o repeats e: the same type, reason and message (the
// event correlator's key, the object and source being the pod's kubelet).
func (e Event) Same(o Event) bool {
	return e.Type == o.Type && e.Reason == o.Reason && e.Message == o.Message
}

// Repeat returns e counted once more, last seen at o's time.
func (e Event) Repeat(o Event) Event {
	if e.First.IsZero() {
		e.First = e.Time
	}
	e.Count = max(e.Count, 1) + max(o.Count, 1)
	e.Time = o.Time
	return e
}

// Bounded returns e with its message cut to maxEventMessage bytes (at a
// rune's start, marked).
func (e Event) Bounded() Event {
	if len(e.Message) > maxEventMessage {
		cut := maxEventMessage
		for cut > 0 && !utf8.RuneStart(e.Message[cut]) {
			cut--
		}
		e.Message = e.Message[:cut] + " …(truncated)"
	}
	return e
}

// Size is what an event weighs against MaxEventBytesPerPod.
func (e Event) Size() int { return len(e.Type) + len(e.Reason) + len(e.Message) + 64 }

// AddEvent returns evs (oldest first, aggregated) with e added as the
// kubelet's recorder does: a repeat of an event there is counted into it
// and moves to the end (it is the newest), else e is appended; then the
// oldest beyond MaxEventsPerPod or MaxEventBytesPerPod are dropped.
func AddEvent(evs []Event, e Event) []Event {
	e = e.Bounded()
	for i := range evs {
		if evs[i].Same(e) {
			e = evs[i].Repeat(e)
			evs = append(evs[:i:i], evs[i+1:]...)
			break
		}
	}
	evs = append(evs, e)
	return TrimEvents(evs)
}

// TrimEvents drops the oldest of evs beyond MaxEventsPerPod events or
// MaxEventBytesPerPod bytes (the newest is always kept).
func TrimEvents(evs []Event) []Event {
	size, keep := 0, 0
	for i := len(evs) - 1; i >= 0; i-- {
		size += evs[i].Size()
		if keep > 0 && (keep == MaxEventsPerPod || size > MaxEventBytesPerPod) {
			break
		}
		keep++
	}
	return evs[len(evs)-keep:]
}

// PodEvent is an event of pod UID; Namespace and Name, when known, name
// the pod in its stored events (listed under it after it is deleted).
type PodEvent struct {
	UID             types.UID
	Namespace, Name string
	Event
}

// PodEvents are the stored events of one pod (Name "" when not recorded).
type PodEvents struct {
	UID             types.UID
	Namespace, Name string
	Events          []Event
}

// EventTTL is how long a deleted pod's events are kept after the last one,
// as the API server keeps events (its --event-ttl default).
const EventTTL = time.Hour

// IdentityRecord pins the UID of the pod FullName while its identity hash
// (manifest.Identity) is IdentityHash, when that UID is not the one the
// identity derives: a pod adopted under the UID an older podhost derived
// from its full spec hash (internal/kubelet/manager). Without the record, the
// pod's first label edit after the upgrade would change that UID. The
// record goes when the pod goes or changes identity.
type IdentityRecord struct {
	FullName     string    `json:"fullName"` // namespace/name (also the key)
	IdentityHash string    `json:"identityHash"`
	UID          types.UID `json:"uid"`
}

// ManifestRecord is the last content of one manifest file that decoded and
// validated, so a file that is invalid, unreadable or half-written when
// podhost starts keeps its pods at that version (internal/desired/source).
//
// Data is the file's raw bytes. Today a manifest holds only Pods; once a
// manifest can carry a Secret, its values must not be stored here (store the
// file with the Secret's data stripped, or not at all): the state db is not
// a secret store.
//
// Seen is the file's place in the order the daemon first saw the dir's
// files (1, 2, ...; 0: written by a podhost that did not keep it): of two
// files declaring the same object, the one seen first owns it, across
// restarts too. A file holding a Secret is kept with Data nil: only its
// place.
type ManifestRecord struct {
	Path string `json:"path"` // the file's path in the manifest dir (also the key)
	Data []byte `json:"data"` // raw bytes (base64 in JSON); nil: only Seen is kept
	Seen uint64 `json:"seen,omitempty"`
}

// RolloutRecord is the version history of one pod full name
// (internal/desired/rollout): the last versions of its manifest, the rollback
// window of the newest one and the override (rollback or undo) in force.
type RolloutRecord struct {
	FullName  string     `json:"fullName"` // namespace/name (also the key)
	Revisions []Revision `json:"revisions"`
	// Override, when set, replaces the source's version SourceUID of the
	// pod with revision ToUID until the source yields another version.
	Override *Override `json:"override,omitempty"`
}

// Revision is one version of a pod as its manifest source yielded it.
type Revision struct {
	Number  int             `json:"number"`
	UID     types.UID       `json:"uid"`
	Hash    string          `json:"hash"`
	Source  string          `json:"source"` // file or URL
	Seen    time.Time       `json:"seen"`   // first seen: the rollback window starts here
	Outcome string          `json:"outcome"`
	Ready   bool            `json:"ready,omitempty"` // was Ready once: a version to roll back to
	Reason  string          `json:"reason,omitempty"`
	Pod     json.RawMessage `json:"pod"` // the decoded pod (JSON): brings it back with its UID
}

// Override replaces one version of a pod by an earlier revision.
type Override struct {
	SourceUID types.UID `json:"sourceUID"` // the version the source yields
	ToUID     types.UID `json:"toUID"`     // the revision that runs instead
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Manual    bool      `json:"manual,omitempty"` // rollout undo
	At        time.Time `json:"at"`
}

// UserNSRecord is the user namespace range of one pod with hostUsers: false
// (internal/kubelet/userns): container ids 0..Size-1 are host ids
// HostID..HostID+Size-1, for uids and gids alike (the kubelet's mapping).
// Written before the pod's sandbox is made, kept while the pod exists
// (restarts and new sandboxes reuse it), deleted when the pod is removed.
type UserNSRecord struct {
	UID      types.UID `json:"uid"`
	FullName string    `json:"fullName"`
	HostID   uint32    `json:"hostID"`
	Size     uint32    `json:"size"`
}

// QuotaRecord is the filesystem project ID of one disk emptyDir of a pod
// with hostUsers: false (internal/host/fsquota), measured by the project
// quota instead of a walk. Written before the ID is set on the directory
// (so an ID on the disk is always recorded, and never given to another
// volume), deleted once the directory is removed.
type QuotaRecord struct {
	UID       types.UID `json:"uid"`
	Volume    string    `json:"volume"`
	Path      string    `json:"path"`
	ProjectID uint32    `json:"projectID"`
}

// Key is the record's state db key: "<pod uid>/<volume>".
func (r QuotaRecord) Key() string { return string(r.UID) + "/" + r.Volume }

// JobRecord is a finished Job run whose pods its ttlSecondsAfterFinished
// removed (internal/desired/rolling): the Job's document still declares
// it, so the record keeps podhost from running it again — after a restart
// too — until the document changes (another first pod UID) or goes.
type JobRecord struct {
	Key      string            `json:"key"`      // "Job namespace/name" (also the key)
	FirstUID types.UID         `json:"firstUID"` // the run's first pod: its template's identity
	Status   batchv1.JobStatus `json:"status"`   // the final status, still reported
	Removed  time.Time         `json:"removed"`
}

// CronJobRecord is a CronJob's progress (internal/desired/rolling): its
// creation and last schedule times and the Jobs it made, so a podhost
// restart neither runs a scheduled time again nor loses a Job.
type CronJobRecord struct {
	Key                string    `json:"key"` // "CronJob namespace/name" (also the key)
	Created            time.Time `json:"created"`
	LastScheduleTime   time.Time `json:"lastScheduleTime,omitzero"`
	LastSuccessfulTime time.Time `json:"lastSuccessfulTime,omitzero"`
	Runs               []CronRun `json:"runs,omitempty"`
}

// CronRun is one Job a CronJob made: its scheduled time (its name) and
// its first pod (the identity of the jobTemplate it was made from).
type CronRun struct {
	Scheduled time.Time `json:"scheduled"`
	FirstUID  types.UID `json:"firstUID"`
}
