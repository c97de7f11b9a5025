// Package podstate is podhost's shared vocabulary for what the runtime
// observed: pods and containers as containerd (plus our labels) report them.
// Producers: runtime (list/inspect), pleg. Consumers: syncer, status,
// podworkers housekeeping. It holds plain data only: no I/O, no logic beyond
// small lookups.
package podstate

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

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
