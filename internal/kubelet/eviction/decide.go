package eviction

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The kubelet's local storage messages (pkg/kubelet/eviction/helpers.go).
const (
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
)

// Eviction is one pod to evict: phase Failed, reason Evicted, Message, an
// event, its containers stopped within Grace seconds.
type Eviction struct {
	Pod     *corev1.Pod
	Message string
	Grace   int64
	// Signal is the threshold evicted for, "" for a local storage limit.
	Signal Signal
}

// Decide is the kubelet's synchronize after its observations: first every
// pod over a local storage limit (an emptyDir over its sizeLimit, the pod
// over the sum of its containers' ephemeral-storage limits, a container
// over its own), and if none, for the first threshold to act on, the first
// pod of the ranking that is not critical. pods are the active pods
// (running, not being evicted); dedicatedImageFs: the image filesystem is
// not the node's.
func (e *Evaluator) Decide(p Pressure, pods []*corev1.Pod, usage Usage, dedicatedImageFs bool) []Eviction {
	var out []Eviction
	for _, pod := range pods {
		u := usage[pod.UID]
		if u == nil || IsCritical(pod) {
			continue
		}
		if msg := localStorageExceeded(pod, u, dedicatedImageFs); msg != "" {
			out = append(out, Eviction{Pod: pod, Message: msg, Grace: 1})
		}
	}
	if len(out) > 0 || len(p.Act) == 0 {
		return out
	}
	t := p.Act[0]
	for _, pod := range rank(pods, usage, t.Signal, dedicatedImageFs) {
		if IsCritical(pod) {
			continue
		}
		msg := pressureMessage(pod, t, p, usage[pod.UID], dedicatedImageFs)
		return []Eviction{{Pod: pod, Message: msg, Grace: e.graceFor(t, pod), Signal: t.Signal}}
	}
	return nil
}

// localStorageExceeded is the message of the first local storage limit the
// pod is over, in the kubelet's order, or "".
func localStorageExceeded(pod *corev1.Pod, u *PodUsage, dedicatedImageFs bool) string {
	for _, v := range pod.Spec.Volumes {
		ed := v.EmptyDir
		if ed == nil || ed.Medium == corev1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Sign() <= 0 {
			continue
		}
		if used, ok := u.Volumes[v.Name]; ok && used.Bytes > ed.SizeLimit.Value() {
			return fmt.Sprintf(emptyDirMessageFmt, v.Name, ed.SizeLimit.String())
		}
	}
	if limit, ok := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})[corev1.ResourceEphemeralStorage]; ok {
		dm := diskMeasure{rootfs: !dedicatedImageFs, logs: true, volumes: true}
		if dm.pod(u) > limit.Value() {
			return fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String())
		}
	}
	for _, c := range pod.Spec.Containers {
		limit, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]
		cu, measured := u.Containers[c.Name]
		if !ok || limit.IsZero() || !measured {
			continue
		}
		used := cu.Logs.Bytes
		if !dedicatedImageFs {
			used += cu.Rootfs.Bytes
		}
		if used > limit.Value() {
			return fmt.Sprintf(containerEphemeralStorageMessageFmt, c.Name, limit.String())
		}
	}
	return ""
}

// NeedsDiskUsage: the pod has a local storage limit to enforce, so it is
// measured every period (the others only under disk pressure).
func NeedsDiskUsage(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if ed := v.EmptyDir; ed != nil && ed.Medium != corev1.StorageMediumMemory && ed.SizeLimit != nil && ed.SizeLimit.Sign() > 0 {
			return true
		}
	}
	for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if q, ok := c.Resources.Limits[corev1.ResourceEphemeralStorage]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}
