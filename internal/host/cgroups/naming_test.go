package cgroups

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const uid = types.UID("0b1c2d3e-aaaa-bbbb-cccc-0123456789ab")

func TestNames(t *testing.T) {
	cases := []struct {
		qos         corev1.PodQOSClass
		path, slice string
	}{
		{corev1.PodQOSGuaranteed, "/podhost/pod" + string(uid), "podhost-pod0b1c2d3e_aaaa_bbbb_cccc_0123456789ab.slice"},
		{corev1.PodQOSBurstable, "/podhost/burstable/pod" + string(uid), "podhost-burstable-pod0b1c2d3e_aaaa_bbbb_cccc_0123456789ab.slice"},
		{corev1.PodQOSBestEffort, "/podhost/besteffort/pod" + string(uid), "podhost-besteffort-pod0b1c2d3e_aaaa_bbbb_cccc_0123456789ab.slice"},
	}
	for _, tc := range cases {
		if got := fsPath("podhost", tc.qos, uid); got != tc.path {
			t.Errorf("fsPath(%s) = %q, want %q", tc.qos, got, tc.path)
		}
		if got := sliceName("podhost", tc.qos, uid); got != tc.slice {
			t.Errorf("sliceName(%s) = %q, want %q", tc.qos, got, tc.slice)
		}
		pc, ok := parseSlice("podhost", tc.slice)
		if !ok || pc.UID != uid || pc.QOS != tc.qos || pc.Name != tc.slice {
			t.Errorf("parseSlice(%q) = %+v, %v", tc.slice, pc, ok)
		}
	}
	if got := qosSlice("podhost-test-1", corev1.PodQOSBurstable); got != "podhost_test_1-burstable.slice" {
		t.Errorf("qosSlice with dashed parent = %q", got)
	}
	for _, bad := range []string{"podhost-burstable.slice", "podhost.slice", "other-podx.slice", "podhost-pod.slice", "podhost-weird-podx.slice", "podhost-podx.scope"} {
		if pc, ok := parseSlice("podhost", bad); ok {
			t.Errorf("parseSlice(%q) = %+v, want no match", bad, pc)
		}
	}
}

func TestContainerPath(t *testing.T) {
	m := &Manager{}
	fsPC := PodCgroup{Driver: DriverCgroupfs, Name: "/podhost/burstable/podX"}
	if got := m.ContainerPath(fsPC, "abc"); got != "/podhost/burstable/podX/abc" {
		t.Errorf("cgroupfs ContainerPath = %q", got)
	}
	sdPC := PodCgroup{Driver: DriverSystemd, Name: "podhost-burstable-podX.slice"}
	if got := m.ContainerPath(sdPC, "abc"); got != "podhost-burstable-podX.slice:podhost:abc" {
		t.Errorf("systemd ContainerPath = %q", got)
	}
}
