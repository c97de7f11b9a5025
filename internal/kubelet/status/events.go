package status

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// eventQueue holds the events recorded and not yet written. Like the
// kubelet's event recorder, recording never waits for storage: a sync that
// records "Pulled", "Created" and "Started" used to wait for three state.db
// commits (each an fsync) on the way to its container running. Run writes
// the queue as soon as it is kicked, many events per commit; reads merge
// what is still queued, so `describe` shows an event the moment it is
// recorded.
type eventQueue struct {
	kick chan struct{} // cap 1: Run writes the queue

	// writing is held while a batch is written: Events reads the store
	// and the queue between batches, never a batch dequeued and not yet
	// committed.
	writing sync.Mutex
	pending []records.PodEvent // guarded by Manager.mu
}

// maxQueuedEvents bounds the queue while state.db refuses writes: the
// oldest events go first.
const maxQueuedEvents = 4096

// Event records an event for a pod (written by Run, or the next Flush).
func (m *Manager) Event(uid types.UID, typ, reason, message string) {
	if uid == "" { // the store refuses it, and with it the batch it is in
		m.log.Warn("event without a pod UID dropped", "reason", reason, "message", message)
		return
	}
	e := records.PodEvent{UID: uid, Event: records.Event{Time: m.opts.Clock.Now(), Type: typ, Reason: reason, Message: message}}
	m.mu.Lock()
	n := m.names[uid]
	e.Namespace, e.Name = n.Namespace, n.Name
	if len(m.events.pending) >= maxQueuedEvents {
		m.events.pending = m.events.pending[1:]
	}
	m.events.pending = append(m.events.pending, e)
	m.notifyLocked()
	m.mu.Unlock()
	select {
	case m.events.kick <- struct{}{}:
	default:
	}
}

// Events returns a pod's events, oldest first, aggregated (a repeat is
// one event with a count, records.AddEvent): the stored ones, then the
// ones still queued.
func (m *Manager) Events(uid types.UID) ([]records.Event, error) {
	m.events.writing.Lock() // not between a batch's dequeue and its commit
	defer m.events.writing.Unlock()
	stored, err := m.store.Events(uid)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.events.pending {
		if e.UID == uid {
			stored = records.AddEvent(stored, e.Event) // aggregated as the store will
		}
	}
	return stored, nil
}

// flushEvents writes the queued events in one transaction; on failure they
// are queued again, ahead of newer ones.
func (m *Manager) flushEvents() {
	m.events.writing.Lock()
	defer m.events.writing.Unlock()
	m.mu.Lock()
	batch := m.events.pending
	m.events.pending = nil
	m.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := m.store.AddEvents(batch); err != nil {
		m.log.Warn("record events", "events", len(batch), "err", err)
		m.mu.Lock()
		m.events.pending = append(batch, m.events.pending...)
		m.mu.Unlock()
	}
}
