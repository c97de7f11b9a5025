package manifest

import "testing"

// TestDecodeIgnoredKinds: the RBAC kinds and the metrics APIService are
// decoded (names as the API server allows them, a namespaced kind's
// namespace defaulted, a cluster-scoped one's left empty) and carried as
// objects without effect, with a hash that follows their content.
func TestDecodeIgnoredKinds(t *testing.T) {
	const data = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:metrics-server"}
rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: ServiceAccount, name: web}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec: {group: metrics.k8s.io, version: v1beta1, groupPriorityMinimum: 100, versionPriority: 100, service: {name: metrics-server, namespace: default}}
`
	objs, err := DecodeObjects("x.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ kind, ns, name string }{
		{KindClusterRole, "", "system:metrics-server"},
		{KindRoleBinding, "default", "reader"},
		{KindAPIService, "", "v1beta1.metrics.k8s.io"},
	}
	if len(objs.Ignored) != len(want) || len(objs.Pods)+len(objs.Workloads) != 0 {
		t.Fatalf("objects: %+v", objs)
	}
	for i, w := range want {
		ig := objs.Ignored[i]
		if ig.Kind != w.kind || ig.ObjectMeta.Namespace != w.ns || ig.ObjectMeta.Name != w.name || ig.Hash == "" {
			t.Errorf("object %d: %s %s/%s %q, want %v", i, ig.Kind, ig.ObjectMeta.Namespace, ig.ObjectMeta.Name, ig.Hash, w)
		}
	}
	edited, err := DecodeObjects("x.yaml", []byte(data[:len("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:metrics-server\"}\n")]+
		"rules: [{apiGroups: [\"\"], resources: [pods], verbs: [list]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if edited.Ignored[0].Hash == objs.Ignored[0].Hash {
		t.Error("an edit of a ClusterRole's rules keeps its hash")
	}
	if _, err := DecodeObjects("x.yaml", []byte(data+"---\n"+data[:len("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:metrics-server\"}\n")])); err == nil {
		t.Error("a ClusterRole declared twice in a file was accepted")
	}
}
