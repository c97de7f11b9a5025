// Package fsquota measures disk emptyDirs with filesystem project quotas,
// as the kubelet's LocalStorageCapacityIsolationFSQuotaMonitoring
// (k8s.io/kubernetes pkg/volume/util/fsquota, which cannot be imported
// without k8s.io/kubernetes and runs xfs_quota and lsattr): where the
// directory is on ext4 or XFS mounted with project quotas, each emptyDir
// gets a project ID of its own, set on the directory with PROJINHERIT
// (every file made below it carries the ID), and its usage — bytes and
// inodes — is one quotactl instead of a walk of the tree. No limit is set:
// the quota only counts, enforcement stays eviction's (as the kubelet's).
//
// As the kubelet, only for pods with hostUsers: false: a process in the
// host's user namespace may change the project ID of a file it owns (the
// kernel refuses it only from another user namespace), and would hide its
// files from the count. Every other emptyDir is walked (eviction.DiskUsage).
//
// IDs: from FirstID (the kubelet's 1048577) up, the lowest one not
// recorded, not named in /etc/projid or /etc/projects, and with no usage on
// the filesystem (the kubelet's QuotaIDIsInUse). The ID is written to the
// state db before it is set on the directory (a crash in between leaves a
// record and a directory without the ID: it is walked, and the next set up
// sets it); it is released only once the directory is gone.
package fsquota

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// FirstID is the lowest project ID handed out (the kubelet's FirstQuota).
const FirstID = 1048577

// maxInUseSkipped bounds the IDs found in use on the filesystem before an
// allocation gives up (the kubelet's maxUnusedQuotasToSearch).
const maxInUseSkipped = 128

// ErrNoID: no free project ID was found.
var ErrNoID = errors.New("no free project ID")

// Store keeps the IDs (*state.DB).
type Store interface {
	AllocateQuota(want records.QuotaRecord, pick func(used []records.QuotaRecord) (uint32, error)) (records.QuotaRecord, error)
	DeleteQuota(key string) error
	ListQuotas() ([]records.QuotaRecord, error)
}

// Kernel is the filesystem side (System).
type Kernel interface {
	Supported(dir string) error
	Project(dir string) (id uint32, inherit bool, err error)
	SetProject(dir string, id uint32) error
	Usage(dir string, id uint32) (bytes, inodes int64, err error)
}

// Method says how a volume is measured.
type Method string

const (
	MethodQuota Method = "project quota"
	MethodWalk  Method = "walk"
)

// Options configure a Manager.
type Options struct {
	Kernel Kernel // nil: System
	// Reserved are the files naming project IDs in use by the
	// administrator (nil: /etc/projid and /etc/projects).
	Reserved []string
	Logger   *slog.Logger
}

// Manager assigns, reads and releases the volumes' project IDs. Safe for
// concurrent use.
type Manager struct {
	store Store
	k     Kernel
	opts  Options

	mu   sync.Mutex
	recs map[string]records.QuotaRecord // by Key
}

// New loads the recorded IDs; a record whose directory is gone (removed
// while podhost was down) is released.
func New(store Store, opts Options) (*Manager, error) {
	if opts.Kernel == nil {
		opts.Kernel = System{}
	}
	if opts.Reserved == nil {
		opts.Reserved = []string{"/etc/projid", "/etc/projects"}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	recs, err := store.ListQuotas()
	if err != nil {
		return nil, fmt.Errorf("fsquota: %w", err)
	}
	m := &Manager{store: store, k: opts.Kernel, opts: opts, recs: map[string]records.QuotaRecord{}}
	for _, r := range recs {
		if _, err := os.Lstat(r.Path); errors.Is(err, fs.ErrNotExist) {
			if err := store.DeleteQuota(r.Key()); err != nil {
				return nil, fmt.Errorf("fsquota: release %s: %w", r.Key(), err)
			}
			continue
		}
		m.recs[r.Key()] = r
	}
	return m, nil
}

// Assign gives the disk emptyDir volume of pod, at dir (new and empty),
// a project ID when it can be measured by one, and says which method
// measures it (logged at debug). It never fails the volume: what goes
// wrong is logged and the volume is walked, as the kubelet's emptyDir
// set up only logs a failed quota assignment.
func (m *Manager) Assign(pod *corev1.Pod, volume, dir string) Method {
	log := m.opts.Logger.With("pod", pod.Namespace+"/"+pod.Name, "volume", volume, "path", dir)
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		log.Debug("emptyDir measured by walking: the pod shares the host's user namespace (its containers could change the project ID)", "method", MethodWalk)
		return MethodWalk
	}
	if err := m.k.Supported(dir); err != nil {
		log.Debug("emptyDir measured by walking", "method", MethodWalk, "reason", err)
		return MethodWalk
	}
	want := records.QuotaRecord{UID: pod.UID, Volume: volume, Path: dir}
	rec, err := m.store.AllocateQuota(want, func(used []records.QuotaRecord) (uint32, error) { return m.pick(dir, used) })
	if err != nil {
		log.Warn("emptyDir measured by walking: no project ID", "method", MethodWalk, "err", err)
		return MethodWalk
	}
	if err := m.k.SetProject(dir, rec.ProjectID); err != nil {
		if derr := m.store.DeleteQuota(rec.Key()); derr != nil { // the ID stays recorded: never reused
			log.Warn("fsquota: release of an unset project ID", "projectID", rec.ProjectID, "err", derr)
		}
		log.Warn("emptyDir measured by walking: project ID not set", "method", MethodWalk, "err", err)
		return MethodWalk
	}
	m.mu.Lock()
	m.recs[rec.Key()] = rec
	m.mu.Unlock()
	log.Debug("emptyDir measured by project quota", "method", MethodQuota, "projectID", rec.ProjectID)
	return MethodQuota
}

// Usage returns the bytes and inodes of pod uid's emptyDir volume from
// its project quota; ok false when it has none (it is walked), or when its
// directory does not carry its ID (a directory made again).
func (m *Manager) Usage(uid types.UID, volume string) (bytes, inodes int64, ok bool, err error) {
	m.mu.Lock()
	rec, found := m.recs[records.QuotaRecord{UID: uid, Volume: volume}.Key()]
	m.mu.Unlock()
	if !found {
		return 0, 0, false, nil
	}
	id, _, err := m.k.Project(rec.Path)
	if err != nil || id != rec.ProjectID {
		return 0, 0, false, err
	}
	bytes, inodes, err = m.k.Usage(rec.Path, id)
	return bytes, inodes, err == nil, err
}

// Release frees the IDs of pod uid's volumes once their directories are
// gone; one that still exists keeps its ID (files on the disk may carry
// it) and is named in the error.
func (m *Manager) Release(uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for key, r := range m.recs {
		if r.UID != uid {
			continue
		}
		if _, err := os.Lstat(r.Path); !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("fsquota: project ID %d of %s kept: %s is still there", r.ProjectID, key, r.Path))
			continue
		}
		if err := m.store.DeleteQuota(key); err != nil {
			errs = append(errs, fmt.Errorf("fsquota: release %s: %w", key, err))
			continue
		}
		delete(m.recs, key)
	}
	return errors.Join(errs...)
}

// pick returns the lowest ID from FirstID that no record holds, the
// administrator's files do not name, and the filesystem of dir has no
// usage for.
func (m *Manager) pick(dir string, used []records.QuotaRecord) (uint32, error) {
	taken, err := reservedIDs(m.opts.Reserved)
	if err != nil {
		return 0, err
	}
	for _, r := range used {
		taken[r.ProjectID] = true
	}
	skipped := 0
	for id := uint32(FirstID); id < 1<<32-1; id++ {
		if taken[id] {
			continue
		}
		b, i, err := m.k.Usage(dir, id)
		if err != nil {
			return 0, err
		}
		if b == 0 && i == 0 {
			return id, nil
		}
		if skipped++; skipped > maxInUseSkipped {
			break
		}
	}
	return 0, fmt.Errorf("%w from %d: %d in use on the filesystem of %s", ErrNoID, FirstID, skipped, dir)
}

// Count is how many volumes have a project ID (measured by their quota).
func (m *Manager) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}
