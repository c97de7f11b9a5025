package manager

import "sync"

// changes tells watchers that the pods Pods returns may have changed (a
// snapshot applied, a stopped pod gone): what the status manager's
// Changed does not see, such as an edit of a pod's labels.
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait is closed at the next notify.
func (c *changes) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

func (c *changes) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// Changed is closed at the next change of the desired set or of the
// stopping pods.
func (m *Manager) Changed() <-chan struct{} { return m.changes.wait() }
