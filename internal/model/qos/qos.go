// Package qos computes a pod's Kubernetes QoS class, its containers' OOM
// score adjustments and its effective resource requests, with the kubelet's
// rules (pkg/apis/core/v1/helper/qos, pkg/kubelet/qos/policy.go,
// k8s.io/component-helpers/resource). Pure functions, no I/O.
package qos

import (
	corev1 "k8s.io/api/core/v1"
)

// SystemNodeCritical is the priority class of node-critical pods
// (scheduling.SystemNodeCritical).
const SystemNodeCritical = "system-node-critical"

// OOM score adjustments, as the kubelet's policy.
const (
	GuaranteedOOMScoreAdj = -997
	BestEffortOOMScoreAdj = 1000
	// burstable scores stay strictly between the two classes.
	minBurstableOOMScoreAdj = 1000 + GuaranteedOOMScoreAdj // 3
	maxBurstableOOMScoreAdj = BestEffortOOMScoreAdj - 1    // 999
)

// PodQOS returns the pod's QoS class exactly as the kubelet's GetPodQOS:
// a status.qosClass already set wins; pod-level resources, when set, decide;
// otherwise BestEffort when no container (init included) has a cpu or memory
// request or limit, Guaranteed when every container has cpu and memory limits
// and the summed requests equal the summed limits, else Burstable.
func PodQOS(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS is PodQOS ignoring status.qosClass.
func ComputePodQOS(pod *corev1.Pod) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	if r := pod.Spec.Resources; r != nil {
		addPositive(requests, r.Requests)
		if len(r.Limits) > 0 {
			if !addPositive(limits, r.Limits) {
				guaranteed = false
			}
		}
	} else {
		for _, c := range allContainers(pod) {
			addPositive(requests, c.Resources.Requests)
			if !addPositive(limits, c.Resources.Limits) {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// addPositive adds the positive cpu and memory quantities of src into dst and
// reports whether src had both a positive cpu and a positive memory value.
func addPositive(dst, src corev1.ResourceList) bool {
	var cpu, mem bool
	for name, q := range src {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			continue
		}
		if q.Sign() <= 0 {
			continue
		}
		cpu = cpu || name == corev1.ResourceCPU
		mem = mem || name == corev1.ResourceMemory
		sum := q.DeepCopy()
		if prev, ok := dst[name]; ok {
			sum.Add(prev)
		}
		dst[name] = sum
	}
	return cpu && mem
}

func allContainers(pod *corev1.Pod) []corev1.Container {
	out := make([]corev1.Container, 0, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	out = append(out, pod.Spec.Containers...)
	return append(out, pod.Spec.InitContainers...)
}

// OOMScoreAdj returns the oom_score_adj for a container of the pod, as the
// kubelet's GetContainerOOMScoreAdjust: Guaranteed -997, BestEffort 1000,
// Burstable 1000 - 1000*memoryRequest/memoryCapacity clamped to [3, 999]
// (pod-level memory requests not given to containers are shared equally;
// sidecars never score above the regular container with the smallest request).
// Node-critical pods get -997 whatever their class: the kubelet's
// IsNodeCriticalPod is a critical pod (every static pod is, and podhost's
// pods are static-like) with priorityClassName system-node-critical. A
// memoryCapacity <= 0 gives Burstable containers 999.
func OOMScoreAdj(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int {
	if pod.Spec.PriorityClassName == SystemNodeCritical {
		return GuaranteedOOMScoreAdj
	}
	switch PodQOS(pod) {
	case corev1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return maxBurstableOOMScoreAdj
	}
	var extra int64
	if podLevelRequests(pod) {
		extra = remainingPodMemoryPerContainer(pod)
	}
	adj := 1000 - 1000*(c.Resources.Requests.Memory().Value()+extra)/memoryCapacity
	if IsSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		minAdj := 1000 - 1000*(minRegularMemory(pod)+extra)/memoryCapacity
		adj = min(adj, minAdj)
	}
	switch {
	case adj < minBurstableOOMScoreAdj:
		return minBurstableOOMScoreAdj
	case adj >= BestEffortOOMScoreAdj:
		return maxBurstableOOMScoreAdj
	}
	return int(adj)
}

// IsSidecar reports whether c is one of the pod's restartable init containers.
func IsSidecar(pod *corev1.Pod, c *corev1.Container) bool {
	if !IsRestartable(c) {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// IsRestartable reports whether an init container is a sidecar
// (restartPolicy: Always on the container).
func IsRestartable(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func podLevelRequests(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for name := range r.Requests {
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
			return true
		}
	}
	return false
}

func minRegularMemory(pod *corev1.Pod) int64 {
	v := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
	for _, c := range pod.Spec.Containers[1:] {
		v = min(v, c.Resources.Requests.Memory().Value())
	}
	return v
}

func remainingPodMemoryPerContainer(pod *corev1.Pod) int64 {
	podMem := pod.Spec.Resources.Requests.Memory()
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	if podMem.IsZero() || n == 0 {
		return 0
	}
	agg := ContainerRequests(pod)
	return (podMem.Value() - agg.Memory().Value()) / n
}

// ContainerRequests aggregates the containers' requests as the scheduler and
// kubelet do: the sum over regular containers and sidecars, or the largest
// init-container step (an init container plus the sidecars started before
// it) when that is bigger, per resource. Pod-level resources and overhead
// are not included.
func ContainerRequests(pod *corev1.Pod) corev1.ResourceList {
	reqs := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		AddList(reqs, c.Resources.Requests)
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		step := corev1.ResourceList{}
		if IsRestartable(c) {
			AddList(reqs, c.Resources.Requests)
			AddList(sidecars, c.Resources.Requests)
			AddList(step, sidecars)
		} else {
			AddList(step, c.Resources.Requests)
			AddList(step, sidecars)
		}
		maxList(initMax, step)
	}
	maxList(reqs, initMax)
	return reqs
}

// PodRequests is the pod's effective request per resource (what admission
// accounts): ContainerRequests, with pod-level cpu/memory requests taking
// precedence when set, plus the pod overhead.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	reqs := ContainerRequests(pod)
	if r := pod.Spec.Resources; r != nil {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := r.Requests[name]; ok {
				reqs[name] = q.DeepCopy()
			}
		}
	}
	AddList(reqs, pod.Spec.Overhead)
	return reqs
}

// AddList adds src's quantities into dst.
func AddList(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := q.DeepCopy()
		if prev, ok := dst[name]; ok {
			sum.Add(prev)
		}
		dst[name] = sum
	}
}

func maxList(dst, src corev1.ResourceList) {
	for name, q := range src {
		if prev, ok := dst[name]; !ok || q.Cmp(prev) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// MilliCPUToShares converts a cpu request in millicores to cgroup v1 cpu
// shares like the kubelet (minimum 2, maximum 262144).
func MilliCPUToShares(milliCPU int64) uint64 {
	const (
		minShares    = 2
		maxShares    = 262144
		sharesPerCPU = 1024
	)
	if milliCPU == 0 {
		return minShares
	}
	shares := milliCPU * sharesPerCPU / 1000
	switch {
	case shares < minShares:
		return minShares
	case shares > maxShares:
		return maxShares
	}
	return uint64(shares)
}

// QuotaPeriod is the CFS period the kubelet uses, in microseconds.
const QuotaPeriod = 100000

// MilliCPUToQuota converts a cpu limit in millicores to a CFS quota for the
// given period like the kubelet (0 = no limit, minimum 1000).
func MilliCPUToQuota(milliCPU, period int64) int64 {
	const minQuota = 1000
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/1000, minQuota)
}
