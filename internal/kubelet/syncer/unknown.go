package syncer

import (
	"sync"
	"time"

	"github.com/podhost/podhost/internal/model/podstate"
)

// unknownLimit is how long a container may stay in unknown state before
// the syncer acts as the kubelet does for a CRI container in unknown
// state: a new attempt replaces it (removing it kills it first). Below it,
// the state is containerd's transient UNKNOWN (a shim slower than
// containerd's 2 s: a busy machine, a containerd restart) and the
// container is left alone (podActions.Unknown).
const unknownLimit = time.Minute

// unknownTracker remembers since when each container instance has been
// seen in unknown state. An entry not seen for unknownLimit (its pod gone,
// its state known again in a pod not planned since) is dropped, so the map
// holds only containers unknown now.
type unknownTracker struct {
	mu      sync.Mutex
	entries map[string]unknownEntry // container ID
}

type unknownEntry struct{ first, last time.Time }

// stuck records the unknown containers of running as seen at now and
// returns the IDs unknown for unknownLimit or longer (nil if none).
func (u *unknownTracker) stuck(running *podstate.Pod, now time.Time) map[string]bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out map[string]bool
	for id, e := range u.entries {
		if now.Sub(e.last) >= unknownLimit {
			delete(u.entries, id)
		}
	}
	if running == nil {
		return nil
	}
	for _, c := range running.Containers {
		if c.State != podstate.StateUnknown {
			delete(u.entries, c.ID)
			continue
		}
		if u.entries == nil {
			u.entries = map[string]unknownEntry{}
		}
		e, ok := u.entries[c.ID]
		if !ok {
			e.first = now
		}
		e.last = now
		u.entries[c.ID] = e
		if now.Sub(e.first) >= unknownLimit {
			if out == nil {
				out = map[string]bool{}
			}
			out[c.ID] = true
		}
	}
	return out
}
