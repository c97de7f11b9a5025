// Package shimgroup assigns pod sandboxes to shared containerd shims.
//
// containerd's runc v2 shim serves every task whose spec carries the same
// io.containerd.runc.v2.group annotation from one process. The kubelet's CRI
// plugin groups by pod (one shim per pod, ≈ 4.5 MiB each); podhost packs up
// to Size pods into one shim, so the per-pod cost is a fraction of that.
// The price is the blast radius: kill -9 of a shim ends the containers of
// every pod in its group (containerd reports each task's exit, and the pod
// workers restart them per restartPolicy). Size 1 is one shim per pod.
//
// A sandbox keeps its group for its lifetime (recorded in its sandbox
// record); Assign picks the fullest group that has room, so groups stay
// dense and a new pod joins a running shim rather than one that may be
// shutting down. A group is named after the sandbox that opened it, so a
// name is never used twice: a new group never reaches a shim left from an
// earlier one of the same name (one still shutting down, one a podhost
// that lost its state left running, one that stopped answering), which a
// reused name would, since containerd finds a group's shim by its name.
// Groups is safe for concurrent use.
package shimgroup

import (
	"strings"
	"sync"
)

// Prefix starts every group name podhost assigns.
const Prefix = "podhost-shim-"

// Groups tracks which sandbox is in which group.
type Groups struct {
	size int
	mu   sync.Mutex
	of   map[string]string // sandbox ID → group
	n    map[string]int    // group → sandboxes in it
	seq  map[string]int    // group → order first seen: ties go to the older
	next int
}

// New returns an allocator packing up to size sandboxes per group; size
// <= 1 gives every sandbox a group of its own, named after it.
func New(size int) *Groups {
	return &Groups{size: size, of: map[string]string{}, n: map[string]int{}, seq: map[string]int{}}
}

// Add records that sandbox id is in group (sandboxes found at start).
// Re-adding a sandbox moves it.
func (g *Groups) Add(id, group string) {
	if id == "" || group == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked(id)
	g.joinLocked(id, group)
}

// Assign returns the group of sandbox id, choosing one if it has none: the
// group with the most sandboxes that still has room (ties: the older),
// else a new group named after id.
func (g *Groups) Assign(id string) string {
	if g.size <= 1 {
		return id
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if group, ok := g.of[id]; ok {
		return group
	}
	best, bestN := Prefix+id, 0
	for name, n := range g.n {
		if !strings.HasPrefix(name, Prefix) || n >= g.size {
			continue // a group of its own (size 1), or full
		}
		if n > bestN || (n == bestN && g.seq[name] < g.seq[best]) {
			best, bestN = name, n
		}
	}
	g.joinLocked(id, best)
	return best
}

func (g *Groups) joinLocked(id, group string) {
	if g.n[group] == 0 {
		g.seq[group] = g.next
		g.next++
	}
	g.of[id] = group
	g.n[group]++
}

// Release forgets sandbox id (its sandbox is gone).
func (g *Groups) Release(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked(id)
}

func (g *Groups) releaseLocked(id string) {
	group, ok := g.of[id]
	if !ok {
		return
	}
	delete(g.of, id)
	if g.n[group]--; g.n[group] <= 0 {
		delete(g.n, group)
		delete(g.seq, group)
	}
}
