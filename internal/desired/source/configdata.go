package source

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/configdata"
	"github.com/podhost/podhost/internal/desired/manifest"
)

// checkImmutable refuses a new version of a file that changes the content
// of a ConfigMap or Secret its last good version declared immutable
// (Kubernetes refuses such an update; the old content stays).
func checkImmutable(base string, prev, next manifest.Objects) error {
	oldCM := map[string]*corev1.ConfigMap{}
	for _, cm := range prev.ConfigMaps {
		if cm.Immutable != nil && *cm.Immutable {
			oldCM[cm.Namespace+"/"+cm.Name] = cm
		}
	}
	for _, cm := range next.ConfigMaps {
		old, ok := oldCM[cm.Namespace+"/"+cm.Name]
		if ok && (!reflect.DeepEqual(old.Data, cm.Data) || !reflect.DeepEqual(old.BinaryData, cm.BinaryData) || cm.Immutable == nil || !*cm.Immutable) {
			return fmt.Errorf("%s: ConfigMap %s/%s is immutable: its data and immutable field cannot change (delete it, then add it again)", base, cm.Namespace, cm.Name)
		}
	}
	oldSec := map[string]*corev1.Secret{}
	for _, s := range prev.Secrets {
		if s.Immutable != nil && *s.Immutable {
			oldSec[s.Namespace+"/"+s.Name] = s
		}
	}
	for _, s := range next.Secrets {
		old, ok := oldSec[s.Namespace+"/"+s.Name]
		if ok && (!reflect.DeepEqual(old.Data, s.Data) || old.Type != s.Type || s.Immutable == nil || !*s.Immutable) {
			return fmt.Errorf("%s: Secret %s/%s is immutable: its data and immutable field cannot change (delete it, then add it again)", base, s.Namespace, s.Name)
		}
	}
	return nil
}

// dataKeys are the change-detection lines of the snapshot's ConfigMaps and
// Secrets.
func (s Snapshot) dataKeys() []string {
	var ids []string
	for _, cm := range s.ConfigMaps {
		ids = append(ids, "cm "+cm.Namespace+"/"+cm.Name+" "+configdata.DataHash(cm))
	}
	for _, sec := range s.Secrets {
		ids = append(ids, "secret "+sec.Namespace+"/"+sec.Name+" "+configdata.DataHash(sec))
	}
	return ids
}
