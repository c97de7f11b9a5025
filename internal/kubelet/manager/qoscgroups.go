package manager

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/qos"
)

// QOSCgroups sets what the QoS-level cgroups hold that depends on the
// active pods, and node allocatable on the cgroup above them
// (*cgroups.Manager). The BestEffort level's fixed minimum is set by the
// cgroups package itself.
type QOSCgroups interface {
	// SetBurstableCPUShares sets the Burstable level's cpu shares (weight
	// on v2 and systemd); cheap when unchanged.
	SetBurstableCPUShares(ctx context.Context, shares uint64) error
	// SetNodeAllocatable sets the top cgroup's cpu shares from cpuMilli and
	// its memory limit; cheap when unchanged.
	SetNodeAllocatable(ctx context.Context, cpuMilli, memoryBytes int64) error
}

// updateQOSCgroups is the kubelet's UpdateQOSCgroups for cpu
// (pkg/kubelet/cm/qos_container_manager_linux.go, setCPUCgroupConfig): the
// Burstable QoS cgroup gets the shares of the summed cpu requests of the
// active Burstable pods. The kubelet runs it in SyncPod before it creates
// a pod cgroup and every minute; podhost runs it before new pods' workers
// start (startPods: a pod's request counts before its cgroup is made) and
// on housekeeping's full passes (after a snapshot or a worker's change, so
// within a pass of a pod going away or resizing, and once a minute). A
// failure is logged; the next pass tries again.
//
// Node allocatable is enforced on the cgroup above the QoS levels first,
// as the kubelet's container manager does at start (and retries every
// minute until the kernel takes it): before the first pod's cgroup is
// made, and again on each pass until it holds.
func (m *Manager) updateQOSCgroups(ctx context.Context) {
	if m.qosCgroups == nil {
		return
	}
	if m.enforced != nil {
		cpu, mem := m.enforced.Cpu().MilliValue(), m.enforced.Memory().Value()
		if err := m.qosCgroups.SetNodeAllocatable(ctx, cpu, mem); err != nil {
			m.log.Warn("enforce node allocatable", "cpuMilli", cpu, "memoryBytes", mem, "err", err)
		}
	}
	shares := burstableCPUShares(m.activePods())
	if err := m.qosCgroups.SetBurstableCPUShares(ctx, shares); err != nil {
		m.log.Warn("update QoS cgroups", "burstableCPUShares", shares, "err", err)
	}
}

// burstableCPUShares is the Burstable QoS cgroup's cpu shares for pods
// (the active ones): MilliCPUToShares of the sum of the Burstable pods' cpu
// requests, each as the kubelet's resource.PodRequests (qos.PodRequests:
// the larger of the init-container steps and the regular containers plus
// sidecars, pod-level requests first, plus overhead); the minimum (2) when
// there is none.
func burstableCPUShares(pods []*corev1.Pod) uint64 {
	var milli int64
	for _, p := range pods {
		if qos.PodQOS(p) != corev1.PodQOSBurstable {
			continue
		}
		reqs := qos.PodRequests(p)
		milli += reqs.Cpu().MilliValue()
	}
	return qos.MilliCPUToShares(milli)
}
