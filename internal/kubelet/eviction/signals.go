// Package eviction is the kubelet's eviction manager (pkg/kubelet/eviction)
// for one node: thresholds on the node's memory and disks
// (evictionHard, evictionSoft with grace periods), the MemoryPressure and
// DiskPressure conditions they raise, the ranking of pods when one is met,
// and the local ephemeral storage limits (a container's ephemeral-storage
// limit, an emptyDir's sizeLimit, the pod's sum) enforced by evicting the
// pod. The core (this file, evaluate.go, rank.go, localstorage.go) is pure;
// manager.go measures and acts through interfaces the daemon satisfies.
package eviction

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is an eviction signal, named as the kubelet names it.
type Signal string

// The signals podhost observes (the kubelet's, less pid.available and
// containerfs.*: podhost runs containers on the image filesystem).
const (
	SignalMemoryAvailable            Signal = "memory.available"
	SignalAllocatableMemoryAvailable Signal = "allocatableMemory.available"
	SignalNodeFsAvailable            Signal = "nodefs.available"
	SignalNodeFsInodesFree           Signal = "nodefs.inodesFree"
	SignalImageFsAvailable           Signal = "imagefs.available"
	SignalImageFsInodesFree          Signal = "imagefs.inodesFree"
)

// resourceInodes is the resource an inodesFree signal reclaims (the
// kubelet's internal "inodes").
const resourceInodes corev1.ResourceName = "inodes"

// signalResource is what evicting a pod reclaims for a signal; a signal
// outside it is not supported.
var signalResource = map[Signal]corev1.ResourceName{
	SignalMemoryAvailable: corev1.ResourceMemory, SignalAllocatableMemoryAvailable: corev1.ResourceMemory,
	SignalNodeFsAvailable: corev1.ResourceEphemeralStorage, SignalImageFsAvailable: corev1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree: resourceInodes, SignalImageFsInodesFree: resourceInodes,
}

// signalCondition is the node condition a met threshold of the signal raises.
var signalCondition = map[Signal]corev1.NodeConditionType{
	SignalMemoryAvailable: corev1.NodeMemoryPressure, SignalAllocatableMemoryAvailable: corev1.NodeMemoryPressure,
	SignalNodeFsAvailable: corev1.NodeDiskPressure, SignalNodeFsInodesFree: corev1.NodeDiskPressure,
	SignalImageFsAvailable: corev1.NodeDiskPressure, SignalImageFsInodesFree: corev1.NodeDiskPressure,
}

// DefaultHard is the kubelet's default evictionHard (Linux).
func DefaultHard() map[string]string {
	return map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%"}
}

// Threshold is one threshold: the signal is met when what is available
// falls below Quantity, or below Percentage of the capacity.
type Threshold struct {
	Signal     Signal
	Quantity   *resource.Quantity
	Percentage float64 // 0..1
	// GracePeriod: how long a soft threshold must stay met before a pod is
	// evicted for it; 0 for a hard threshold.
	GracePeriod time.Duration
	Hard        bool
}

// value is the threshold in bytes (inodes) for a capacity.
func (t Threshold) value(capacity int64) int64 {
	if t.Quantity != nil {
		return t.Quantity.Value()
	}
	return int64(t.Percentage * float64(capacity))
}

// String is the threshold as the config writes it, "memory.available<100Mi".
func (t Threshold) String() string {
	if t.Quantity != nil {
		return string(t.Signal) + "<" + t.Quantity.String()
	}
	return string(t.Signal) + "<" + strconv.FormatFloat(t.Percentage*100, 'f', -1, 64) + "%"
}

// Parse turns the config's evictionHard, evictionSoft and
// evictionSoftGracePeriod (the kubelet's names and value forms: a quantity
// or a percentage of the capacity; "0" or "0%" turns a signal off) into
// thresholds, as the kubelet's ParseThresholdConfig: every soft threshold
// needs a grace period, and the hard memory.available threshold is also
// applied to allocatableMemory.available (enforceNodeAllocatable: pods,
// which podhost always does). A nil hard map is DefaultHard(); a map given
// is taken as it is (the kubelet does not merge in the defaults).
func Parse(hard, soft, softGrace map[string]string) ([]Threshold, error) {
	if hard == nil {
		hard = DefaultHard()
	}
	hardT, err := parseStatements("evictionHard", hard)
	if err != nil {
		return nil, err
	}
	softT, err := parseStatements("evictionSoft", soft)
	if err != nil {
		return nil, err
	}
	grace, err := parseGracePeriods(softGrace)
	if err != nil {
		return nil, err
	}
	out := make([]Threshold, 0, len(hardT)+len(softT)+1)
	for _, t := range hardT {
		t.Hard = true
		out = append(out, t)
		if t.Signal == SignalMemoryAvailable {
			t.Signal = SignalAllocatableMemoryAvailable
			out = append(out, t)
		}
	}
	for _, t := range softT {
		g, ok := grace[t.Signal]
		if !ok {
			return nil, fmt.Errorf("evictionSoftGracePeriod: grace period must be specified for the soft eviction threshold %s", t.Signal)
		}
		t.GracePeriod = g
		out = append(out, t)
	}
	for s := range grace {
		if !hasSignal(softT, s) {
			return nil, fmt.Errorf("evictionSoftGracePeriod.%s: no evictionSoft threshold for it", s)
		}
	}
	return out, nil
}

func hasSignal(ts []Threshold, s Signal) bool {
	for _, t := range ts {
		if t.Signal == s {
			return true
		}
	}
	return false
}

// parseStatements parses a map of signal → value, in a fixed order so that
// errors do not depend on map order. Zero values are dropped.
func parseStatements(key string, m map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, name := range sortedKeys(m) {
		s, val := Signal(name), strings.TrimSpace(m[name])
		if _, ok := signalResource[s]; !ok || s == SignalAllocatableMemoryAvailable {
			return nil, fmt.Errorf("%s.%s: unsupported eviction signal (supported: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree)", key, name)
		}
		t, err := parseValue(s, val)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", key, name, err)
		}
		if t != nil {
			out = append(out, *t)
		}
	}
	return out, nil
}

// parseValue parses "10%" or a quantity; nil for a zero threshold.
func parseValue(s Signal, val string) (*Threshold, error) {
	if p, ok := strings.CutSuffix(val, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid percentage %q", val)
		}
		if f < 0 || f > 100 {
			return nil, fmt.Errorf("percentage %q must be between 0%% and 100%%", val)
		}
		if f == 0 {
			return nil, nil
		}
		return &Threshold{Signal: s, Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("invalid quantity %q: %w", val, err)
	}
	if q.Sign() < 0 {
		return nil, fmt.Errorf("eviction threshold %q must not be negative", val)
	}
	if q.IsZero() {
		return nil, nil
	}
	return &Threshold{Signal: s, Quantity: &q}, nil
}

func parseGracePeriods(m map[string]string) (map[Signal]time.Duration, error) {
	out := make(map[Signal]time.Duration, len(m))
	for _, name := range sortedKeys(m) {
		s := Signal(name)
		if _, ok := signalResource[s]; !ok || s == SignalAllocatableMemoryAvailable {
			return nil, fmt.Errorf("evictionSoftGracePeriod.%s: unsupported eviction signal", name)
		}
		d, err := time.ParseDuration(strings.TrimSpace(m[name]))
		if err != nil {
			return nil, fmt.Errorf("evictionSoftGracePeriod.%s: %w", name, err)
		}
		if d < 0 {
			return nil, fmt.Errorf("evictionSoftGracePeriod.%s: must not be negative", name)
		}
		out[s] = d
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// Reservation is what the hard thresholds keep out of node allocatable
// (the kubelet's hardEvictionReservation): memory.available's from the
// memory, nodefs.available's from the ephemeral-storage capacity.
func Reservation(ts []Threshold, capacity corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, t := range ts {
		r := corev1.ResourceMemory
		switch {
		case !t.Hard:
			continue
		case t.Signal == SignalNodeFsAvailable:
			r = corev1.ResourceEphemeralStorage
		case t.Signal != SignalMemoryAvailable:
			continue
		}
		c, ok := capacity[r]
		if !ok {
			continue
		}
		out[r] = *resource.NewQuantity(t.value(c.Value()), resource.BinarySI)
	}
	return out
}
