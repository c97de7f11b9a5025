package manager

import "github.com/podhost/podhost/internal/kubelet/imagegc"

// ReferencedImages returns the image of every container of every pod in
// the manifest directory, admitted or not, running or not: image GC never
// removes them.
func (m *Manager) ReferencedImages() []string {
	m.cfgMu.Lock()
	pods := m.cfg.Pods()
	m.cfgMu.Unlock()
	var out []string
	for _, p := range pods {
		out = append(out, imagegc.PodImages(p)...)
	}
	return out
}

// SourcesReady: the first manifest snapshot was applied (before it no pod
// is desired, whatever the manifests say).
func (m *Manager) SourcesReady() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.started
}
