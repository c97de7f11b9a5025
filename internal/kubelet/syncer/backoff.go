package syncer

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Crash-loop and image-pull back-off, as the kubelet does it: 10 s doubling
// to 5 min per container, forgotten once a container has run cleanly for
// 10 min (or after twice the max delay without failures).
const (
	backoffBase  = 10 * time.Second
	backoffMax   = 5 * time.Minute
	backoffReset = 10 * time.Minute
)

type backoffEntry struct {
	delay time.Duration
	last  time.Time // the last failure (a crash loop: the container's exit)
	why   string    // the last failure's message (pulls: the back-off's message shows it, as the kubelet's)
}

type backoff struct {
	now       func() time.Time
	base, max time.Duration
	mu        sync.Mutex
	m         map[string]*backoffEntry
}

// newBackoff returns a back-off of backoffBase doubling to max (0: the
// kubelet's backoffMax); a max below backoffBase is also the first delay
// (the kubelet's crashLoopBackOff.maxContainerRestartPeriod).
func newBackoff(now func() time.Time, max time.Duration) *backoff {
	if max <= 0 {
		max = backoffMax
	}
	return &backoff{now: now, base: min(backoffBase, max), max: max, m: map[string]*backoffEntry{}}
}

func backoffKey(uid types.UID, container, kind string) string {
	return string(uid) + "/" + container + "/" + kind
}

// inBackoff reports whether key is still waiting, and how long is left. The
// window runs from since, the event that asks for a retry (a container's
// exit, as the kubelet's IsInBackOffSince), or from the last failure when
// since is zero.
func (b *backoff) inBackoff(key string, since time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[key]
	if !ok {
		return false, 0
	}
	from := e.last
	if !since.IsZero() {
		from = since
	}
	left := from.Add(e.delay).Sub(b.now())
	return left > 0, left
}

// next records a failure at time at and returns the new delay.
func (b *backoff) next(key string, at time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[key]
	switch {
	case !ok || at.Sub(e.last) > 2*b.max:
		e = &backoffEntry{delay: b.base}
		b.m[key] = e
	default:
		e.delay *= 2
		if e.delay > b.max {
			e.delay = b.max
		}
	}
	e.last = at
	return e.delay
}

// setWhy records the message of key's last failure (after next).
func (b *backoff) setWhy(key, why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.m[key]; ok {
		e.why = why
	}
}

// why is the message of key's last failure ("" = none).
func (b *backoff) why(key string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.m[key]; ok {
		return e.why
	}
	return ""
}

func (b *backoff) reset(key string) {
	b.mu.Lock()
	delete(b.m, key)
	b.mu.Unlock()
}

// forgetPod drops every entry of a pod.
func (b *backoff) forgetPod(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prefix := string(uid) + "/"
	for k := range b.m {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			delete(b.m, k)
		}
	}
}

// clear drops every entry.
func (b *backoff) clear() {
	b.mu.Lock()
	clear(b.m)
	b.mu.Unlock()
}
