package manager

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/desired/podset"
	"github.com/podhost/podhost/internal/desired/source"
)

// DataStore holds the ConfigMaps and Secrets of the manifests
// (*configdata.Store): the manager replaces its content with each snapshot.
type DataStore interface {
	Replace(cms []*corev1.ConfigMap, secrets []*corev1.Secret) []configdata.Ref
}

// replaceData installs the snapshot's ConfigMaps and Secrets (before its
// pods start, so they find them) and returns those that changed.
func (m *Manager) replaceData(snap source.Snapshot) []configdata.Ref {
	if m.data == nil {
		return nil
	}
	return m.data.Replace(snap.ConfigMaps, snap.Secrets)
}

// indexAndWake records which ConfigMaps and Secrets the desired pods
// reference, then wakes every pod that references one that changed: a
// container waiting on a missing one (CreateContainerConfigError) starts,
// and the configMap and secret volumes of running pods are rewritten. The
// pods keep running; their UIDs do not depend on the objects' content.
func (m *Manager) indexAndWake(updates []podset.Update, changed []configdata.Ref) {
	for _, u := range updates {
		switch {
		case u.Op == podset.REMOVE:
			m.refs.Delete(u.Pod.UID)
		case m.IsDesired(u.Pod.UID):
			m.refs.Set(u.Pod)
		}
	}
	if len(changed) == 0 {
		return
	}
	for _, uid := range m.refs.Pods(changed) {
		if m.IsDesired(uid) {
			m.workers.Wake(uid)
		}
	}
}
