package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// claimServices adds fp's Services and ServiceAccounts to snap, the first
// file declaring one owning it (as for every kind).
func (snap *Snapshot) claimServices(owner map[string]string, fp *filePods) {
	for _, svc := range fp.objs.Services {
		if snap.claim(owner, "Service", svc.Namespace, svc.Name, fp) {
			snap.Services = append(snap.Services, svc)
		}
	}
	for _, sa := range fp.objs.ServiceAccounts {
		if snap.claim(owner, "ServiceAccount", sa.Namespace, sa.Name, fp) {
			snap.ServiceAccounts = append(snap.ServiceAccounts, sa)
		}
	}
	for _, ig := range fp.objs.Ignored {
		if snap.claim(owner, ig.Kind, ig.ObjectMeta.Namespace, ig.ObjectMeta.Name, fp) {
			snap.Ignored = append(snap.Ignored, ig)
		}
	}
}

// serviceKeys are the change-detection lines of the snapshot's Services
// and ServiceAccounts: an edit of a Service's labels or spec is a change.
func (s Snapshot) serviceKeys() []string {
	var ids []string
	for _, svc := range s.Services {
		ids = append(ids, "svc "+svc.Namespace+"/"+svc.Name+" "+objectHash(svc.Labels, svc.Spec))
	}
	for _, sa := range s.ServiceAccounts {
		ids = append(ids, "sa "+sa.Namespace+"/"+sa.Name)
	}
	for _, ig := range s.Ignored {
		ids = append(ids, ig.Kind+" "+ig.ObjectMeta.Namespace+"/"+ig.ObjectMeta.Name+" "+ig.Hash)
	}
	return ids
}

func objectHash(labels map[string]string, spec corev1.ServiceSpec) string {
	b, _ := json.Marshal(struct {
		L map[string]string
		S corev1.ServiceSpec
	}{labels, spec}) // plain data: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
