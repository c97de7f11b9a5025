package cgroups

import (
	"github.com/podhost/podhost/internal/model/qos"

	corev1 "k8s.io/api/core/v1"
)

// Kernel / kubelet constants.
const (
	MinShares     = 2
	MaxShares     = 262144
	SharesPerCPU  = 1024
	DefaultPeriod = 100000 // µs
	MinQuota      = 1000   // µs
)

// PodResources is kubelet's ResourceConfigForPod: cpu shares from the summed
// requests (min 2); cpu quota only if every container (init included) has a
// cpu limit; memory limit only if every container has a memory limit. Pod
// overhead is added. PidsLimit is left 0 (the caller sets a policy).
func PodResources(pod *corev1.Pod) Resources {
	reqs, limits, cpuAll, memAll := podRequestsLimits(pod)
	r := Resources{CPUShares: MilliCPUToShares(reqs.Cpu().MilliValue())}
	if cpuAll {
		if q := MilliCPUToQuota(limits.Cpu().MilliValue(), DefaultPeriod); q > 0 {
			r.CPUQuota, r.CPUPeriod = q, DefaultPeriod
		}
	}
	if memAll {
		r.MemoryLimit = limits.Memory().Value()
	}
	return r
}

// podRequestsLimits sums like kubelet's resource.PodRequests/PodLimits:
// regular containers and sidecars (restartable init containers) add up; each
// other init container counts alone (plus the sidecars started before it);
// the pod needs the max of both. cpuAll/memAll tell whether every container
// declared that limit.
func podRequestsLimits(pod *corev1.Pod) (reqs, limits corev1.ResourceList, cpuAll, memAll bool) {
	cpuAll, memAll = true, true
	note := func(l corev1.ResourceList) {
		if l.Cpu().IsZero() {
			cpuAll = false
		}
		if l.Memory().IsZero() {
			memAll = false
		}
	}
	reqs, limits = corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		addTo(reqs, requestsOf(c))
		addTo(limits, c.Resources.Limits)
		note(c.Resources.Limits)
	}
	initReqs, initLimits := corev1.ResourceList{}, corev1.ResourceList{}
	sideReqs, sideLimits := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		note(c.Resources.Limits)
		r, l := requestsOf(c), c.Resources.Limits
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addTo(reqs, r)
			addTo(limits, l)
			addTo(sideReqs, r)
			addTo(sideLimits, l)
			r, l = sideReqs, sideLimits
		} else {
			r, l = sum(r, sideReqs), sum(l, sideLimits)
		}
		maxInto(initReqs, r)
		maxInto(initLimits, l)
	}
	maxInto(reqs, initReqs)
	maxInto(limits, initLimits)
	addTo(reqs, pod.Spec.Overhead)
	for k, v := range pod.Spec.Overhead { // overhead only raises declared limits
		if cur, ok := limits[k]; ok {
			cur.Add(v)
			limits[k] = cur
		}
	}
	return reqs, limits, cpuAll, memAll
}

// requestsOf is the container's requests, defaulting each missing request
// to its limit (what API-server defaulting does).
func requestsOf(c *corev1.Container) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range c.Resources.Limits {
		out[k] = v.DeepCopy()
	}
	for k, v := range c.Resources.Requests {
		out[k] = v.DeepCopy()
	}
	return out
}

func addTo(dst, src corev1.ResourceList) {
	for k, v := range src {
		if cur, ok := dst[k]; ok {
			cur.Add(v)
			dst[k] = cur
		} else {
			dst[k] = v.DeepCopy()
		}
	}
}

func sum(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	addTo(out, a)
	addTo(out, b)
	return out
}

func maxInto(dst, src corev1.ResourceList) {
	for k, v := range src {
		if cur, ok := dst[k]; !ok || v.Cmp(cur) > 0 {
			dst[k] = v.DeepCopy()
		}
	}
}

// MilliCPUToShares converts a cpu request to v1 cpu.shares (kubelet's rule;
// one implementation, in qos, shared with the spec builder).
func MilliCPUToShares(milliCPU int64) uint64 { return qos.MilliCPUToShares(milliCPU) }

// MilliCPUToQuota converts a cpu limit to a CFS quota for period (µs).
func MilliCPUToQuota(milliCPU int64, period int64) int64 {
	return qos.MilliCPUToQuota(milliCPU, period)
}

// SharesToWeight converts v1 cpu.shares to a v2 cpu.weight / systemd
// CPUWeight (runc's linear mapping [2,262144] → [1,10000]). 0 stays 0.
func SharesToWeight(shares uint64) uint64 {
	if shares == 0 {
		return 0
	}
	if shares < MinShares {
		shares = MinShares
	}
	return 1 + ((shares-2)*9999)/262142
}
