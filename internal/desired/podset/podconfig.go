// Package podset merges manifest snapshots into the desired pod set and
// emits ADD/UPDATE/REMOVE updates, keyed by pod UID.
//
// A changed manifest normally means a new UID (UID is derived from the full
// name and the identity hash), so it shows up as REMOVE of the old pod and
// ADD of the new one; UPDATE happens when the config hash changed but the
// UID did not: an edit of only labels, annotations or resources
// (manifest.MutablePaths), or any edit of a pod with an explicit
// metadata.uid. Updates are ordered REMOVE, UPDATE, ADD, so the
// old pod of a full name is always removed before its successor is added.
package podset

import (
	"cmp"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
)

// Op is the kind of an Update.
type Op int

// Update kinds.
const (
	ADD Op = iota + 1
	UPDATE
	REMOVE
)

func (o Op) String() string {
	switch o {
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case REMOVE:
		return "REMOVE"
	}
	return "UNKNOWN"
}

// Update is one change of the desired set. For REMOVE, Pod is the old pod.
type Update struct {
	Op  Op
	Pod *corev1.Pod
}

// Config is the desired set. It is safe for concurrent use.
type Config struct {
	mu         sync.Mutex
	pods       map[types.UID]*corev1.Pod
	warnings   map[string][]string // full name → warnings
	fileErrors []source.FileError
}

// New returns an empty desired set.
func New() *Config {
	return &Config{pods: map[types.UID]*corev1.Pod{}, warnings: map[string][]string{}}
}

// Apply replaces the desired set with s and returns the updates that turn
// the previous set into the new one: REMOVEs (sorted by full name), then
// UPDATEs, then ADDs (both in snapshot order).
func (c *Config) Apply(s source.Snapshot) []Update {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[types.UID]*corev1.Pod, len(s.Pods))
	var removes, updates, adds []Update
	for _, p := range s.Pods {
		if _, dup := next[p.UID]; dup {
			continue // cannot happen with source's duplicate handling
		}
		next[p.UID] = p
		old, ok := c.pods[p.UID]
		switch {
		case !ok:
			adds = append(adds, Update{Op: ADD, Pod: p})
		case manifest.Hash(old) != manifest.Hash(p):
			updates = append(updates, Update{Op: UPDATE, Pod: p})
		}
	}
	for uid, old := range c.pods {
		if _, ok := next[uid]; !ok {
			removes = append(removes, Update{Op: REMOVE, Pod: old})
		}
	}
	slices.SortFunc(removes, func(a, b Update) int {
		return cmp.Or(cmp.Compare(manifest.FullName(a.Pod), manifest.FullName(b.Pod)),
			cmp.Compare(a.Pod.UID, b.Pod.UID))
	})
	c.pods = next
	c.setErrors(s.Errors)
	return slices.Concat(removes, updates, adds)
}

func (c *Config) setErrors(errs []source.FileError) {
	c.fileErrors = slices.Clone(errs)
	c.warnings = map[string][]string{}
	for _, fe := range errs {
		for _, name := range fe.Kept {
			c.warnings[name] = append(c.warnings[name],
				"manifest "+fe.File+" is invalid; running the last good version: "+firstLine(fe.Error()))
		}
	}
}

func firstLine(s string) string {
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i] + " (and more)"
		}
	}
	return s
}

// Pods returns the desired set, sorted by full name.
func (c *Config) Pods() []*corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(c.pods))
	for _, p := range c.pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Compare(manifest.FullName(a), manifest.FullName(b))
	})
	return out
}

// Warnings returns the warnings for a pod full name (ns/name), e.g. that its
// file turned invalid and the last good version keeps running.
func (c *Config) Warnings(fullName string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.warnings[fullName])
}

// FileErrors returns the file errors of the last snapshot.
func (c *Config) FileErrors() []source.FileError {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.fileErrors)
}
