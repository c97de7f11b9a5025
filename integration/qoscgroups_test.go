//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// burstableCPUFile is the host's cpu weight file of the Burstable QoS
// cgroup (cgroupfs driver): v1 cpu.shares, v2 cpu.weight.
func (d *podhostd) burstableCPUFile() (path string, v2 bool) {
	rel := filepath.Join(d.cgroupRoot, "burstable")
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return filepath.Join("/sys/fs/cgroup", rel, "cpu.weight"), true
	}
	return filepath.Join("/sys/fs/cgroup/cpu", rel, "cpu.shares"), false
}

// TestBurstableQOSCgroupCPUShares: the Burstable QoS cgroup's cpu shares
// are the kubelet's MilliCPUToShares of the summed cpu requests of the
// running Burstable pods (cpu.weight from them on v2), and follow a pod
// going away.
func TestBurstableQOSCgroupCPUShares(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	for _, p := range []struct{ name, cpu string }{{"qa", "250m"}, {"qb", "512m"}, {"qc", "300m"}} {
		d.writeManifest(p.name+".yaml", podManifest(p.name, fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    resources:
      requests: {cpu: %s, memory: 16Mi}
`, env.ImageRef, p.cpu)))
	}
	for _, name := range []string{"qa", "qb", "qc"} {
		d.waitRunning(name)
	}
	file, v2 := d.burstableCPUFile()
	want := func(shares int64) string {
		if v2 {
			return strconv.FormatInt(1+((shares-2)*9999)/262142, 10)
		}
		return strconv.FormatInt(shares, 10)
	}
	expect := func(shares int64, what string) {
		t.Helper()
		var got string
		err := waitFor(30*time.Second, func() (bool, error) {
			b, err := os.ReadFile(file)
			got = strings.TrimSpace(string(b))
			return err == nil && got == want(shares), nil
		})
		if err != nil {
			t.Fatalf("%s: %s = %q, want %s (shares %d)", what, file, got, want(shares), shares)
		}
	}
	expect(1062*1024/1000, "250m+512m+300m")
	d.removeManifest("qb.yaml")
	expect(550*1024/1000, "qb removed: 250m+300m")
}
