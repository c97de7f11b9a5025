package cgroups

import (
	"os"
	"path/filepath"
	"sync"
)

// ensured remembers the Resources a Manager last applied to each pod
// cgroup, so that EnsurePod on an unchanged pod (every periodic resync)
// costs one stat per hierarchy instead of the mkdirs, cpuset copies and
// writes of a full ensure (~120 syscalls on a v1 host, three D-Bus calls
// with the systemd driver). As the kubelet's pod cgroup manager, the full
// work is redone only when the cgroup is missing (Exists) or the pod's
// resources changed: a value rewritten behind podhost's back is not reset
// by a resync.
type ensured struct {
	mu sync.Mutex
	m  map[string]Resources // PodCgroup.Name → applied
}

// same reports whether r was the last Resources applied to name.
func (e *ensured) same(name string, r Resources) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	got, ok := e.m[name]
	return ok && got == r
}

// set records r as applied to name.
func (e *ensured) set(name string, r Resources) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[string]Resources{}
	}
	e.m[name] = r
}

// forget drops name (removed, or an ensure of it failed).
func (e *ensured) forget(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, name)
}

// dirsExist reports whether every dir exists.
func dirsExist(dirs ...string) bool {
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// exists: the pod's dir in every hierarchy.
func (d *fsDriver) exists(pc PodCgroup) bool {
	dirs := make([]string, len(d.hierarchies))
	for i, h := range d.hierarchies {
		dirs[i] = filepath.Join(h, pc.Name)
	}
	return dirsExist(dirs...)
}

// exists: the slice's cgroup dir on a unified host (systemd removes it
// when the slice stops). On v1 it reports false, so every ensure is full.
func (d *systemdDriver) exists(pc PodCgroup) bool {
	return d.v2 && d.root != "" && dirsExist(filepath.Join(d.root, expandSlice(pc.Name)))
}
