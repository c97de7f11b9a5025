package metrics

import (
	"errors"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/model/qos"
)

// StatsSource reads cgroup usage (*cgroups.Manager).
type StatsSource interface {
	PodStats(uid types.UID, qos corev1.PodQOSClass) (cgroups.Stats, error)
	ContainerStats(uid types.UID, qos corev1.PodQOSClass, containerID string) (cgroups.Stats, error)
}

// PodUsage is one reading of a pod's cgroup and of its running containers'.
type PodUsage struct {
	Namespace, Name string
	UID             types.UID
	Pod             cgroups.Stats
	Containers      []ContainerUsage
}

// ContainerUsage is one reading of a running container's cgroup.
type ContainerUsage struct {
	Name, ID, Image string
	Stats           cgroups.Stats
}

// Sample reads the cgroups of every pod that has one. Pods without a
// cgroup (not started, torn down) are skipped; so are containers whose
// cgroup is gone (exited between the status and the read). Other read
// errors are returned joined, with what could be read.
func Sample(pods []*corev1.Pod, src StatsSource) ([]PodUsage, error) {
	var out []PodUsage
	var errs []error
	for _, p := range pods {
		class := p.Status.QOSClass
		if class == "" {
			class = qos.PodQOS(p)
		}
		st, err := src.PodStats(p.UID, class)
		if errors.Is(err, cgroups.ErrNoCgroup) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		u := PodUsage{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Pod: st}
		for _, cs := range runningContainers(p) {
			id := ContainerID(cs.ContainerID)
			cst, err := src.ContainerStats(p.UID, class, id)
			if errors.Is(err, cgroups.ErrNoCgroup) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			u.Containers = append(u.Containers, ContainerUsage{Name: cs.Name, ID: id, Image: cs.Image, Stats: cst})
		}
		out = append(out, u)
	}
	return out, errors.Join(errs...)
}

func runningContainers(p *corev1.Pod) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.State.Running != nil && cs.ContainerID != "" {
			out = append(out, cs)
		}
	}
	return out
}

// Usage is a pod's (or container's) CPU rate and memory working set
// between two readings: what kubectl top prints.
type Usage struct {
	Name        string
	CPUMillis   int64
	MemoryBytes int64
}

// PodTop is a pod's usage with its containers'.
type PodTop struct {
	Namespace, Name string
	Usage
	Containers []Usage
}

// Rates computes the CPU rate (millicores) of each pod and container
// present in both readings, with the later reading's working set, sorted
// by namespace and name.
func Rates(before, after []PodUsage) []PodTop {
	prev := map[types.UID]PodUsage{}
	for _, u := range before {
		prev[u.UID] = u
	}
	var out []PodTop
	for _, u := range after {
		b, ok := prev[u.UID]
		if !ok {
			continue
		}
		t := PodTop{Namespace: u.Namespace, Name: u.Name, Usage: usage(u.Name, b.Pod, u.Pod)}
		bc := map[string]cgroups.Stats{}
		for _, c := range b.Containers {
			bc[c.ID] = c.Stats
		}
		for _, c := range u.Containers {
			if s, ok := bc[c.ID]; ok {
				t.Containers = append(t.Containers, usage(c.Name, s, c.Stats))
			}
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func usage(name string, a, b cgroups.Stats) Usage {
	u := Usage{Name: name, MemoryBytes: int64(b.MemoryWorkingSet)}
	dt := b.Time.Sub(a.Time)
	if dt > 0 && b.CPUUsageNanos >= a.CPUUsageNanos {
		u.CPUMillis = int64(float64(b.CPUUsageNanos-a.CPUUsageNanos) / float64(dt) * 1000)
	}
	return u
}

// DefaultWindow is the CPU sampling window of top.
const DefaultWindow = time.Second
