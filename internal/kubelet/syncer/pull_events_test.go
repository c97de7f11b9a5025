package syncer

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's image events: Pulling then Pulled with the time taken when
// the image is fetched; Pulled "already present" when it is not.
func TestPullEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int64
		want []string
	}{
		{"fetched", 1234, []string{`Normal Pulling Pulling image "busybox:1"`,
			`Normal Pulled Successfully pulled image "busybox:1" in 0s (0s including waiting). Image size: 1234 bytes.`}},
		{"present", 0, []string{`Normal Pulled Container image "busybox:1" already present on machine`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.rt.pullSize = tc.size
			if _, err := syncOnce(t, w, worldPod(corev1.RestartPolicyAlways, "a")); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range w.obs.eventList() {
				if strings.Contains(e, " Pull") {
					got = append(got, e)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("pull events = %q, want %q", got, tc.want)
			}
		})
	}
}
