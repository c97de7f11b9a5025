package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/ops/rthealth"
	"github.com/podhost/podhost/internal/version"
)

// The Ready condition's words, the kubelet's (pkg/kubelet/nodestatus).
const (
	reasonReady    = "KubeletReady"
	reasonNotReady = "KubeletNotReady"
	messageReady   = "podhost is posting ready status"
)

// runtimeVersionTimeout bounds the containerd Version call of GET /v1/node.
const runtimeVersionTimeout = time.Second

// Files the Node's system info is read from (tests use their own).
type nodeFiles struct {
	procStat, machineID, productUUID, bootID string
	osRelease                                []string // the first that exists
}

var hostNodeFiles = nodeFiles{
	procStat: "/proc/stat", machineID: "/etc/machine-id", productUUID: "/sys/class/dmi/id/product_uuid",
	bootID: "/proc/sys/kernel/random/boot_id", osRelease: []string{"/etc/os-release", "/usr/lib/os-release"},
}

// nodeSource builds this machine's core/v1 Node, as a kubelet would post
// it, for GET /v1/node: what does not change while the daemon runs is
// read once (newNodeSource), the Ready condition and the runtime's version
// on each request.
type nodeSource struct {
	static  corev1.Node // name, labels, creation (boot) time, capacity, allocatable, addresses, system info
	started time.Time   // the daemon's start: the Ready condition's transition until containerd's health changes
	health  func() rthealth.Status
	// pressure: the eviction manager's MemoryPressure and DiskPressure (nil: none).
	pressure func() []corev1.NodeCondition
	// runtimeVersion is containerd's version ("" when it cannot say).
	runtimeVersion func(ctx context.Context) (string, error)
	now            func() time.Time
}

// nodeSpec is what the daemon computed at start that the Node shows.
type nodeSpec struct {
	name                  string
	labels                map[string]string
	capacity, allocatable corev1.ResourceList
	hostIP, hostname      string
}

// newNodeSource reads the machine's boot time and system info from files.
func newNodeSource(spec nodeSpec, files nodeFiles, started time.Time) *nodeSource {
	n := corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}}
	n.Name, n.Labels = spec.name, spec.labels
	if boot, err := bootTime(files.procStat); err == nil {
		n.CreationTimestamp = metav1.NewTime(boot)
	}
	n.Status.Capacity, n.Status.Allocatable = spec.capacity, spec.allocatable
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: spec.hostIP}}
	if spec.hostname != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: spec.hostname})
	}
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: readTrimmed(files.machineID), SystemUUID: readTrimmed(files.productUUID), BootID: readTrimmed(files.bootID),
		KernelVersion: kernelRelease(), OSImage: osImage(files.osRelease...),
		KubeletVersion: version.Version, OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH,
	}
	return &nodeSource{static: n, started: started, now: time.Now}
}

// node is the Node now: a copy of the static part with the Ready condition
// and containerd's version (asked only while containerd answers, within
// runtimeVersionTimeout; "" when it fails).
func (s *nodeSource) node(ctx context.Context) *corev1.Node {
	n := s.static.DeepCopy()
	h := s.health()
	if s.pressure != nil {
		n.Status.Conditions = s.pressure() // before Ready, in the kubelet's order
	}
	n.Status.Conditions = append(n.Status.Conditions, readyCondition(h, s.started, s.now()))
	if h.Healthy && s.runtimeVersion != nil {
		ctx, cancel := context.WithTimeout(ctx, runtimeVersionTimeout)
		defer cancel()
		if v, err := s.runtimeVersion(ctx); err == nil && v != "" {
			n.Status.NodeInfo.ContainerRuntimeVersion = "containerd://" + v
		}
	}
	return n
}

// readyCondition is the kubelet's Ready condition from containerd's health:
// heartbeat now; transition when the health last changed, else the
// daemon's start.
func readyCondition(h rthealth.Status, started, now time.Time) corev1.NodeCondition {
	transition := h.Changed
	if transition.IsZero() {
		transition = started
	}
	c := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: reasonReady, Message: messageReady,
		LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(transition)}
	if !h.Healthy {
		c.Status, c.Reason = corev1.ConditionFalse, reasonNotReady
		c.Message = fmt.Sprintf("containerd at %s is unreachable since %s: %s", h.Address, h.Since.Format(time.RFC3339), h.Err)
	}
	return c
}

// bootTime is the machine's boot time: /proc/stat's btime.
func bootTime(procStat string) (time.Time, error) {
	f, err := os.Open(procStat)
	if err != nil {
		return time.Time{}, fmt.Errorf("boot time: %w", err)
	}
	defer f.Close()
	return parseBootTime(f, procStat)
}

// parseBootTime reads "btime <seconds since the epoch>" (name: for errors).
func parseBootTime(r io.Reader, name string) (time.Time, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time: %s: btime %q: %w", name, v, err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, fmt.Errorf("boot time: %s: %w", name, err)
	}
	return time.Time{}, fmt.Errorf("boot time: %s: no btime line", name)
}

// readTrimmed is the file's content without surrounding white space, ""
// when it cannot be read (product_uuid is root-only, absent in some VMs).
func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// osImage is cadvisor's operating system name: PRETTY_NAME of the first
// os-release file that can be read, quotes removed; "Linux" when it has
// none, "" when there is no such file.
func osImage(paths ...string) string {
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
				if u, err := strconv.Unquote(v); err == nil {
					return u
				}
				return strings.Trim(v, `"'`)
			}
		}
		return "Linux"
	}
	return ""
}

// kernelRelease is uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
