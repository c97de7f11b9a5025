// Package userns gives each pod with hostUsers: false its own range of host
// uids and gids, as the kubelet's pkg/kubelet/userns UsernsManager: ranges
// of IDsPerPod (65536) ids, aligned on IDsPerPod, taken from
// [FirstID, FirstID+Length); the lowest free one goes to the next pod. The
// pod's user namespace maps container ids 0..65535 to HostID..HostID+65535
// for uids and gids alike.
//
// The ranges live in the state db (userns/<pod uid>): the range is chosen
// and written in one transaction before the pod's sandbox is made, so it
// survives a daemon restart and no two pods share one; it goes when the pod
// is removed (Release, from the syncer's cleanup) or when the manager's
// housekeeping purges a pod nobody lists (state PurgePod). After a state db
// loss, recovery writes it back from the containers' podhost.io/userns label.
package userns

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// IDsPerPod is the size of one pod's range (the kubelet's default
// idsPerPod and its unit).
const IDsPerPod = 1 << 16

// Default range: the kubelet's (every id from 65536 up) but the last
// 65536, whose end would be uid 4294967295 ((uid_t)-1), which the kernel
// refuses in a uid_map.
const (
	DefaultFirstID = IDsPerPod
	DefaultLength  = 1<<32 - 2*IDsPerPod
)

// ErrFull: every range is taken.
var ErrFull = errors.New("no free user namespace range (every range of 65536 ids is in use)")

// Store keeps the ranges (*state.DB).
type Store interface {
	AllocateUserNS(uid types.UID, pick func(used []records.UserNSRecord) (records.UserNSRecord, error)) (records.UserNSRecord, error)
	DeleteUserNS(uid types.UID) error
}

// Manager hands out and releases ranges. Safe for concurrent use: every
// call is one state db transaction.
type Manager struct {
	store         Store
	first, length uint32
}

// New returns a Manager over [first, first+length); both must be multiples
// of IDsPerPod, first at least IDsPerPod (host root is never mapped) and
// the range must end below 4294967295.
func New(store Store, first, length uint32) (*Manager, error) {
	switch {
	case first < IDsPerPod || first%IDsPerPod != 0:
		return nil, fmt.Errorf("userns: first id %d must be a multiple of %d, at least %d", first, IDsPerPod, IDsPerPod)
	case length < IDsPerPod || length%IDsPerPod != 0:
		return nil, fmt.Errorf("userns: length %d must be a positive multiple of %d", length, IDsPerPod)
	case uint64(first)+uint64(length) > 1<<32-IDsPerPod:
		return nil, fmt.Errorf("userns: range %d+%d reaches uid 4294967295", first, length)
	}
	return &Manager{store: store, first: first, length: length}, nil
}

// Wants tells whether pod runs in its own user namespace (hostUsers: false).
func Wants(pod *corev1.Pod) bool {
	return pod != nil && pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// Get returns pod's range, allocating the lowest free one on first use.
func (m *Manager) Get(pod *corev1.Pod) (records.UserNSRecord, error) {
	rec, err := m.store.AllocateUserNS(pod.UID, func(used []records.UserNSRecord) (records.UserNSRecord, error) {
		id, err := m.pick(used)
		if err != nil {
			return records.UserNSRecord{}, err
		}
		return records.UserNSRecord{FullName: pod.Namespace + "/" + pod.Name, HostID: id, Size: IDsPerPod}, nil
	})
	if err != nil {
		return rec, fmt.Errorf("user namespace of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return rec, nil
}

// Release frees the range of pod uid (absent is fine).
func (m *Manager) Release(uid types.UID) error {
	if err := m.store.DeleteUserNS(uid); err != nil {
		return fmt.Errorf("release user namespace of pod %s: %w", uid, err)
	}
	return nil
}

// pick returns the first id of the lowest range no record overlaps. Records
// outside the manager's range (an older configuration) still hold theirs.
func (m *Manager) pick(used []records.UserNSRecord) (uint32, error) {
	slots := m.length / IDsPerPod
	taken := make([]bool, slots) // at most 65534 bytes
	for _, r := range used {
		lo, hi := uint64(r.HostID), uint64(r.HostID)+uint64(r.Size) // [lo, hi)
		first, end := uint64(m.first), uint64(m.first)+uint64(m.length)
		if r.Size == 0 || hi <= first || lo >= end {
			continue
		}
		lo, hi = max(lo, first), min(hi, end)
		for s := (lo - first) / IDsPerPod; s <= (hi-1-first)/IDsPerPod; s++ {
			taken[s] = true
		}
	}
	for s, t := range taken {
		if !t {
			return m.first + uint32(s)*IDsPerPod, nil
		}
	}
	return 0, ErrFull
}

// Label is the value of the podhost.io/userns container label: the
// mapping "<hostID>:<size>" (container id 0 → hostID, uids and gids).
func Label(r records.UserNSRecord) string {
	return strconv.FormatUint(uint64(r.HostID), 10) + ":" + strconv.FormatUint(uint64(r.Size), 10)
}

// ParseLabel reads a Label value back.
func ParseLabel(v string) (hostID, size uint32, err error) {
	h, s, ok := strings.Cut(v, ":")
	hid, err1 := strconv.ParseUint(h, 10, 32)
	sz, err2 := strconv.ParseUint(s, 10, 32)
	if !ok || err1 != nil || err2 != nil || sz == 0 || hid+sz > 1<<32-1 {
		return 0, 0, fmt.Errorf("user namespace label %q: want <hostID>:<size>", v)
	}
	return uint32(hid), uint32(sz), nil
}
