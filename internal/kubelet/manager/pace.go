package manager

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/kubelet/podworkers"
)

// Housekeeping runs every pass (2 s, as the kubelet's) but does its
// expensive part — listing the runtime, the cgroup and volume dirs and the
// sandbox records, containerd's leases and snapshots — only when it can
// find something: on the first pass after something changed since the
// last full pass (a runtime event, a manifest snapshot, a pod worker
// starting, changing state, finishing or going away), and otherwise every
// fullPassPeriod as a safety net (the kubelet's container GC period). An
// idle node with any number of pods therefore costs one in-memory pass
// every 2 s, not a runtime list.
const fullPassPeriod = time.Minute

// pace is housekeeping's memory of the last passes, and of the last log
// GC. It owns its lock: the sync loop records changes, housekeeping asks.
type pace struct {
	mu         sync.Mutex
	lastChange time.Time // the last change seen (zero: none yet)
	lastFull   time.Time // the last full pass (zero: none yet)
	// wantAt asks for a full pass at or after it (zero: none): a full
	// pass that left work for later (log GC spaced by logGCPeriod) must
	// not wait for the next change or minute.
	wantAt    time.Time
	workers   map[types.UID]podworkers.WorkerState
	lastLogGC time.Time
}

// changed records a change at now.
func (p *pace) changed(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastChange = now
}

// observeWorkers records a change when the pod workers differ from those
// of the previous pass.
func (p *pace) observeWorkers(known map[types.UID]podworkers.WorkerState, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !sameWorkers(p.workers, known) {
		p.lastChange = now
	}
	p.workers = known
}

// fullDue reports whether the pass at now must do the full work, and
// records it as done if so.
func (p *pace) fullDue(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	wanted := !p.wantAt.IsZero() && !now.Before(p.wantAt)
	if !wanted && !fullPassDue(p.lastFull, p.lastChange, now) {
		return false
	}
	p.lastFull, p.wantAt = now, time.Time{}
	return true
}

// fullAt asks for a full pass at or after t.
func (p *pace) fullAt(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wantLocked(t)
}

func (p *pace) wantLocked(t time.Time) {
	if p.wantAt.IsZero() || t.Before(p.wantAt) {
		p.wantAt = t
	}
}

// logGCDue reports whether log GC runs at now (logGCPeriod after the
// last one), recording it if so; else it asks for a full pass once the
// period is over.
func (p *pace) logGCDue(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if next := p.lastLogGC.Add(logGCPeriod); now.Before(next) {
		p.wantLocked(next)
		return false
	}
	p.lastLogGC = now
	return true
}

// fullPassDue: the first pass, a pass after a change later than the last
// full pass, and a pass fullPassPeriod after the last full one.
func fullPassDue(lastFull, lastChange, now time.Time) bool {
	return lastFull.IsZero() || lastChange.After(lastFull) || now.Sub(lastFull) >= fullPassPeriod
}

func sameWorkers(a, b map[types.UID]podworkers.WorkerState) bool {
	if len(a) != len(b) {
		return false
	}
	for uid, s := range a {
		if t, ok := b[uid]; !ok || t != s {
			return false
		}
	}
	return true
}
