package cgroups

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const podPrefix = "pod"

// qosDir is the QoS level below the parent ("" for Guaranteed).
func qosDir(qos corev1.PodQOSClass) string {
	switch qos {
	case corev1.PodQOSBurstable:
		return "burstable"
	case corev1.PodQOSBestEffort:
		return "besteffort"
	default:
		return ""
	}
}

// qosFromDir is the inverse of qosDir.
func qosFromDir(dir string) corev1.PodQOSClass {
	switch dir {
	case "burstable":
		return corev1.PodQOSBurstable
	case "besteffort":
		return corev1.PodQOSBestEffort
	default:
		return corev1.PodQOSGuaranteed
	}
}

// fsPath is the cgroupfs path of a pod, relative to the mount root:
// /<parent>[/<qos>]/pod<uid>.
func fsPath(parent string, qos corev1.PodQOSClass, uid types.UID) string {
	parts := []string{"", parent}
	if d := qosDir(qos); d != "" {
		parts = append(parts, d)
	}
	return strings.Join(append(parts, podPrefix+string(uid)), "/")
}

// fsQOSPaths are the QoS-level dirs below the parent that hold pods.
func fsQOSPaths(parent string) []string {
	return []string{"/" + parent, "/" + parent + "/burstable", "/" + parent + "/besteffort"}
}

// escapeSystemd makes one cgroup name component safe for systemd slice
// nesting (kubelet's rule: "-" becomes "_").
func escapeSystemd(part string) string {
	return strings.ReplaceAll(part, "-", "_")
}

// unescapeSystemd is the inverse of escapeSystemd for pod UIDs (UIDs never
// contain "_").
func unescapeSystemd(part string) string {
	return strings.ReplaceAll(part, "_", "-")
}

// slicePrefix is the dash-joined name of a cgroup path, without ".slice":
// [podhost burstable] → "podhost-burstable".
func slicePrefix(parts ...string) string {
	esc := make([]string, 0, len(parts))
	for _, p := range parts {
		esc = append(esc, escapeSystemd(p))
	}
	return strings.Join(esc, "-")
}

// parentSlice is "<parent>.slice".
func parentSlice(parent string) string { return slicePrefix(parent) + ".slice" }

// qosSlice is the QoS slice ("<parent>-burstable.slice"), or the parent
// slice for Guaranteed.
func qosSlice(parent string, qos corev1.PodQOSClass) string {
	if d := qosDir(qos); d != "" {
		return slicePrefix(parent, d) + ".slice"
	}
	return parentSlice(parent)
}

// sliceName is the pod's slice: "<parent>[-<qos>]-pod<uid_>.slice".
func sliceName(parent string, qos corev1.PodQOSClass, uid types.UID) string {
	parts := []string{parent}
	if d := qosDir(qos); d != "" {
		parts = append(parts, d)
	}
	return slicePrefix(append(parts, podPrefix+string(uid))...) + ".slice"
}

// parseSlice recovers the pod from a slice name made by sliceName.
func parseSlice(parent, name string) (PodCgroup, bool) {
	rest, ok := strings.CutSuffix(name, ".slice")
	if !ok {
		return PodCgroup{}, false
	}
	rest, ok = strings.CutPrefix(rest, slicePrefix(parent)+"-")
	if !ok {
		return PodCgroup{}, false
	}
	qos := corev1.PodQOSGuaranteed
	if d, r, found := strings.Cut(rest, "-"); found {
		if qos = qosFromDir(d); qos == corev1.PodQOSGuaranteed {
			return PodCgroup{}, false
		}
		rest = r
	}
	uid, ok := strings.CutPrefix(rest, podPrefix)
	if !ok || uid == "" || strings.Contains(uid, "-") {
		return PodCgroup{}, false
	}
	return PodCgroup{Driver: DriverSystemd, Name: name, UID: types.UID(unescapeSystemd(uid)), QOS: qos}, true
}
