package manager

import (
	"cmp"
	"log/slog"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Pod identity across upgrades (docs/decisions.md).
//
// A pod without metadata.uid gets PodUID(namespace, name, identity hash)
// from the manifest package, so an edit of only its labels, annotations or
// resources keeps its UID. podhost versions before identity hashes derived
// the UID from the full spec hash instead: on the first snapshot after a
// start, a pod whose UID has no trace (no allocation checkpoint, nothing in
// the runtime) adopts the UID of the same pod admitted before under
// another scheme: its legacy UID (manifest.LegacyUID) if that was admitted
// or runs, or a runtime pod of the same full name whose containers were
// created from exactly this document (same config hash) or carry its
// identity hash (a pinned UID whose record was lost with a damaged db). The adopted UID
// is pinned in an identity record (bbolt) for as long as the pod's
// identity hash stays, so its later label edits keep it too, across
// restarts and reboots.

// IdentityStore keeps the pinned UIDs (*state.DB).
type IdentityStore interface {
	ListIdentities() ([]records.IdentityRecord, error)
	UpdateIdentities(put []records.IdentityRecord, del []string) error
}

// resolveIdentities returns pods with the pinned or adopted UIDs set (the
// pods changed are copies) and stores the identity records still in use.
// first is the first snapshot after a start: only then are pods adopted,
// from prevAdmitted (allocation checkpoints) and rpods (what runs).
func (m *Manager) resolveIdentities(pods []*corev1.Pod, first bool, prevAdmitted map[types.UID]bool, rpods []*podstate.Pod) []*corev1.Pod {
	used := map[string]records.IdentityRecord{}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		uid := m.pinnedUID(p, first, prevAdmitted, rpods)
		if uid == p.UID {
			out = append(out, p)
			continue
		}
		used[manifest.FullName(p)] = records.IdentityRecord{FullName: manifest.FullName(p), IdentityHash: manifest.Identity(p), UID: uid}
		cp := *p
		cp.UID = uid
		out = append(out, &cp)
	}
	m.identities.replace(used)
	return out
}

// pinnedUID is the UID pod p runs under: its record's, an adopted one, or
// its own.
func (m *Manager) pinnedUID(p *corev1.Pod, first bool, prevAdmitted map[types.UID]bool, rpods []*podstate.Pod) types.UID {
	identity := manifest.Identity(p)
	if identity == "" || p.UID != manifest.PodUID(p.Namespace, p.Name, identity) {
		return p.UID // metadata.uid set: the user's identity
	}
	if rec, ok := m.identities.get(manifest.FullName(p)); ok && rec.IdentityHash == identity {
		return rec.UID
	}
	if !first {
		return p.UID
	}
	if uid := adoptable(p, prevAdmitted, rpods); uid != "" {
		m.log.Info("pod keeps the UID it was admitted under", "pod", manifest.FullName(p), "podUID", string(uid), "identityUID", string(p.UID))
		return uid
	}
	return p.UID
}

// adoptable returns the UID of an earlier admission of pod p under another
// UID scheme, "" if there is none or p's own UID was admitted or runs.
func adoptable(p *corev1.Pod, prevAdmitted map[types.UID]bool, rpods []*podstate.Pod) types.UID {
	inRuntime := map[types.UID]bool{}
	var sameDoc []types.UID // runtime pods of this name created from this very document
	for _, rp := range rpods {
		inRuntime[rp.UID] = true
		if rp.FullName() == manifest.FullName(p) && rp.UID != p.UID && ranDocument(rp, manifest.Hash(p), manifest.Identity(p)) {
			sameDoc = append(sameDoc, rp.UID)
		}
	}
	if prevAdmitted[p.UID] || inRuntime[p.UID] {
		return ""
	}
	if legacy := manifest.LegacyUID(p); prevAdmitted[legacy] || inRuntime[legacy] {
		return legacy
	}
	slices.SortFunc(sameDoc, func(a, b types.UID) int { // admitted first, then by UID
		if prevAdmitted[a] != prevAdmitted[b] {
			if prevAdmitted[a] {
				return -1
			}
			return 1
		}
		return cmp.Compare(a, b)
	})
	if len(sameDoc) > 0 {
		return sameDoc[0]
	}
	return ""
}

// ranDocument reports whether a container of rp was created from the
// document with config hash hash, or (created by this version) from one
// with identity hash identity.
func ranDocument(rp *podstate.Pod, hash, identity string) bool {
	for _, c := range rp.Containers {
		if hash != "" && c.Hash == hash || identity != "" && c.Labels[wellknown.LabelIdentityHash] == identity {
			return true
		}
	}
	return false
}

// identityRecords are the identity records in use, by full name, and
// their store. It owns its lock; the records are read from the store at
// the first use.
type identityRecords struct {
	store IdentityStore // nil: nothing is kept across restarts
	log   *slog.Logger

	mu   sync.Mutex
	recs map[string]records.IdentityRecord // nil: not read yet
}

func newIdentityRecords(store IdentityStore, log *slog.Logger) *identityRecords {
	return &identityRecords{store: store, log: log}
}

// get is the record of the pod fullName.
func (r *identityRecords) get(fullName string) (records.IdentityRecord, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loadLocked()
	rec, ok := r.recs[fullName]
	return rec, ok
}

func (r *identityRecords) loadLocked() {
	if r.recs != nil {
		return
	}
	r.recs = map[string]records.IdentityRecord{}
	if r.store == nil {
		return
	}
	recs, err := r.store.ListIdentities()
	if err != nil {
		r.log.Warn("read pod identity records", "err", err)
	}
	for _, rec := range recs {
		r.recs[rec.FullName] = rec
	}
}

// replace makes used the identity records, writing the difference.
func (r *identityRecords) replace(used map[string]records.IdentityRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loadLocked()
	var put []records.IdentityRecord
	var del []string
	for name, rec := range used {
		if r.recs[name] != rec {
			put = append(put, rec)
		}
	}
	for name := range r.recs {
		if _, ok := used[name]; !ok {
			del = append(del, name)
		}
	}
	r.recs = used
	if len(put) == 0 && len(del) == 0 || r.store == nil {
		return
	}
	slices.SortFunc(put, func(a, b records.IdentityRecord) int { return cmp.Compare(a.FullName, b.FullName) })
	slices.Sort(del)
	if err := r.store.UpdateIdentities(put, del); err != nil {
		r.log.Error("store pod identity records", "err", err, "pods", slices.Collect(maps.Keys(used)))
	}
}
