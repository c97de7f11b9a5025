package manifest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/podhost/podhost/internal/model/wellknown"
)

const minimalPod = `apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  containers:
  - name: c
    image: busybox:1.36
`

func podDocNamed(name string) string { return strings.Replace(minimalPod, "%s", name, 1) }

func TestDecodeMultiDoc(t *testing.T) {
	data := "---\n# leading separator and comments\n" + podDocNamed("a") +
		"---\n---   # empty document\n# only a comment\n" +
		"--- \n" + podDocNamed("b") + "...\n" + podDocNamed("c")
	pods := mustDecodeString(t, "multi.yaml", data)
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	if got := strings.Join(names, ","); got != "a,b,c" {
		t.Errorf("pods = %s, want a,b,c", got)
	}
	// Documents are numbered without the empty ones, as Docs returns them.
	bad := strings.Replace(data, "metadata:\n  name: c\n", "metadata:\n  name: C\n", 1)
	_, err := Decode("multi.yaml", []byte(bad))
	if !strings.HasPrefix(errString(err), `multi.yaml: [doc 3] metadata.name: Invalid value: "C"`) {
		t.Errorf("got %v", err)
	}
}

func TestDecodeSingleDocHasNoDocPrefix(t *testing.T) {
	_, err := Decode("x.yaml", []byte("---\n"+strings.Replace(podDocNamed("a"), "    image: busybox:1.36\n", "", 1)+"---\n"))
	if got, want := errString(err), "x.yaml: spec.containers[0].image: Required value"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestDecodeAllOrNothing(t *testing.T) {
	data := podDocNamed("good") + "---\n" + podDocNamed("Bad")
	pods, err := Decode("x.yaml", []byte(data))
	if pods != nil || err == nil {
		t.Fatalf("got %v, %v; want nil pods and an error", pods, err)
	}
}

func TestDecodeDuplicateNameInFile(t *testing.T) {
	data := podDocNamed("a") + "---\n" + podDocNamed("a")
	_, err := Decode("x.yaml", []byte(data))
	want := `x.yaml: [doc 2] metadata.name: Duplicate value: "default/a": also defined in document 1 of this file`
	if got := errString(err); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDecodeDuplicateUIDInFile(t *testing.T) {
	withUID := func(name string) string {
		return strings.Replace(podDocNamed(name), "  name: "+name+"\n", "  name: "+name+"\n  uid: abc-123\n", 1)
	}
	_, err := Decode("x.yaml", []byte(withUID("a")+"---\n"+withUID("b")))
	want := `x.yaml: [doc 2] metadata.uid: Duplicate value: "abc-123": also used by document 1 of this file`
	if got := errString(err); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestDecodeEmptyFile(t *testing.T) {
	for _, data := range []string{"", "\n\n", "# nothing\n", "---\n---\n", "\xef\xbb\xbf"} {
		pods, err := Decode("x.yaml", []byte(data))
		if err != nil || len(pods) != 0 {
			t.Errorf("Decode(%q) = %v, %v; want no pods, no error", data, pods, err)
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	js := `{
	"apiVersion": "v1", "kind": "Pod",
	"metadata": {"name": "a"},
	"spec": {"containers": [{"image": "busybox:1.36", "name": "c"}]}
}`
	fromJSON := mustDecodeString(t, "a.json", js)[0]
	fromYAML := mustDecodeString(t, "a.yaml", podDocNamed("a"))[0]
	if fromJSON.UID != fromYAML.UID || Hash(fromJSON) != Hash(fromYAML) {
		t.Errorf("JSON and YAML of the same pod differ: %s/%s vs %s/%s", fromJSON.UID, Hash(fromJSON), fromYAML.UID, Hash(fromYAML))
	}
	fromJSON.Annotations[wellknown.AnnotationConfigSource] = "a.yaml"
	if !equality.Semantic.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("JSON and YAML decode differently:\n%+v\n%+v", fromJSON, fromYAML)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"JSON duplicate", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","name":"b"}}`,
			`x.yaml: metadata.name: duplicate field`},
		{"JSON syntax", "{\"apiVersion\": \"v1\",\n \"kind\": \"Pod\",,\n}",
			`x.yaml: JSON syntax error at line 2, column 16: invalid character ',' looking for beginning of object key string`},
		{"JSON after YAML doc: line numbers count from the file", podDocNamed("a") + "---\n{\"kind\": \"Pod\",\n]",
			`x.yaml: [doc 2] JSON syntax error at line 11, column 1: invalid character ']' looking for beginning of object key string`},
		{"YAML syntax in doc 2", podDocNamed("a") + "---\nkind: Pod\n  bad: indent\n",
			`x.yaml: [doc 2] yaml: line 11: mapping values are not allowed in this context`},
		{"YAML duplicate", podDocNamed("a") + "metadata: {}\n", `x.yaml: metadata: duplicate field`},
		{"case matters", strings.Replace(podDocNamed("a"), "image:", "Image:", 1),
			`x.yaml: spec.containers[0].Image: unknown field (did you mean "image"?)`},
		{"unknown top-level", podDocNamed("a") + "extra: 1\n", `x.yaml: extra: unknown field`},
		{"unknown in metadata", strings.Replace(podDocNamed("a"), "  name: a\n", "  name: a\n  lables: {}\n", 1),
			`x.yaml: metadata.lables: unknown field (did you mean "labels"?)`},
		{"missing kind", "apiVersion: v1\nmetadata: {name: a}\n",
			`x.yaml: kind: Required value: this must be a Pod, ConfigMap or Secret (apiVersion: v1)`},
		{"kind List", "apiVersion: v1\nkind: List\nitems: []\n",
			`x.yaml: kind: Unsupported value: "List": not supported by podhost (only Pod, ConfigMap, Secret, Service, ServiceAccount, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob; RBAC kinds and the metrics APIService without effect)`},
		{"CronJob", "apiVersion: batch/v1\nkind: CronJob\n",
			"x.yaml: metadata.name: Required value: name is required\nx.yaml: spec.schedule: Required value"},
		{"ClusterRole v1beta1", "apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: ClusterRole\nmetadata: {name: reader}\n",
			`x.yaml: apiVersion: Unsupported value: "rbac.authorization.k8s.io/v1beta1": supported values: "rbac.authorization.k8s.io/v1" for a ClusterRole`},
		{"ClusterRole unknown field", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\nrules: [{verbs: [get], resource: [pods]}]\n",
			`x.yaml: rules[0].resource: unknown field (did you mean "resources"?)`},
		{"ClusterRole namespaced", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader, namespace: kube-system}\n",
			`x.yaml: metadata.namespace: Invalid value: "kube-system": not allowed on this type: it is cluster-scoped`},
		{"Role name with a slash", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: a/b}\n",
			`x.yaml: metadata.name: Invalid value: "a/b": may not contain '/'`},
		{"APIService of another group", "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.custom.example.com}\nspec: {group: custom.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 100}\n",
			`x.yaml: spec.group: Forbidden: an APIService for custom.example.com/v1 (podhost's kube API aggregates no API servers; it serves metrics.k8s.io/v1beta1 itself) is not supported by podhost`},
		{"PodDisruptionBudget", "apiVersion: policy/v1\nkind: PodDisruptionBudget\n",
			`x.yaml: kind: Unsupported value: "PodDisruptionBudget": not supported by podhost (it limits evictions through the API, which podhost's kube API serves without budgets; only Pod, ConfigMap, Secret, Service, ServiceAccount, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob; RBAC kinds and the metrics APIService without effect)`},
		{"NetworkPolicy", "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n",
			`x.yaml: kind: Unsupported value: "NetworkPolicy": not supported by podhost (podhost does not filter pod traffic; only Pod, ConfigMap, Secret, Service, ServiceAccount, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob; RBAC kinds and the metrics APIService without effect)`},
		{"Deployment without selector", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			`x.yaml: spec.selector: Required value`},
		{"Deployment v1", "apiVersion: v1\nkind: Deployment\nmetadata: {name: web}\n",
			`x.yaml: apiVersion: Unsupported value: "v1": supported values: "apps/v1" for a Deployment`},
		{"kind not a string", "apiVersion: v1\nkind: [Pod]\n",
			`x.yaml: kind: Invalid value: list: expected the string "Pod", "ConfigMap" or "Secret"`},
		{"apiVersion v2", strings.Replace(podDocNamed("a"), "apiVersion: v1", "apiVersion: v2", 1),
			`x.yaml: apiVersion: Unsupported value: "v2": supported values: "v1"`},
		{"missing apiVersion", strings.Replace(podDocNamed("a"), "apiVersion: v1\n", "", 1),
			`x.yaml: apiVersion: Required value: must be "v1" for a Pod`},
		{"bool for string", strings.Replace(podDocNamed("a"), "image: busybox:1.36", "image: yes", 1),
			`x.yaml: spec.containers[0].image: Invalid value: true: expected string, got boolean (quote it: YAML reads unquoted yes/no/on/off/true/false as booleans)`},
		{"number for string", strings.Replace(podDocNamed("a"), "name: c", "name: 1.5", 1),
			`x.yaml: spec.containers[0].name: Invalid value: 1.5: expected string, got number (quote it)`},
		{"object for list", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers: {name: c}\n",
			`x.yaml: spec.containers: Invalid value: object: expected list, got object`},
		{"YAML structure error", strings.Replace(podDocNamed("a"), "  containers:\n", "  containers: {}\n", 1),
			`x.yaml: yaml: line 6: did not find expected key`},
		{"string for object", podDocNamed("a") + "  securityContext: root\n",
			`x.yaml: spec.securityContext: Invalid value: "root": expected object, got string`},
		{"int32 overflow", podDocNamed("a") + "    ports: [{containerPort: 4294967296}]\n",
			`x.yaml: spec.containers[0].ports[0].containerPort: Invalid value: 4294967296: out of range for int32`},
		{"fraction for int", podDocNamed("a") + "    ports: [{containerPort: 80.5}]\n",
			`x.yaml: spec.containers[0].ports[0].containerPort: Invalid value: 80.5: must be an integer`},
		{"int-or-string float", podDocNamed("a") + "    livenessProbe: {tcpSocket: {port: 1.5}}\n",
			`x.yaml: spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: 1.5: expected an integer (int32) or a string`},
		{"quantity list", podDocNamed("a") + "    resources: {limits: {cpu: [1]}}\n",
			`x.yaml: spec.containers[0].resources.limits[cpu]: Invalid value: list: expected quantity (a string like "500m" or "1Gi", or a number), got list`},
		{"bad timestamp", strings.Replace(podDocNamed("a"), "  name: a\n", "  name: a\n  creationTimestamp: yesterday\n", 1),
			`x.yaml: metadata.creationTimestamp: Invalid value: "yesterday": parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{"infinity", podDocNamed("a") + "  activeDeadlineSeconds: .inf\n",
			`x.yaml: spec.activeDeadlineSeconds: Invalid value: +Inf: not representable in JSON`},
		{"control chars stay on one line", podDocNamed("a") + "\"bad\\nkey\\u0007\": 1\n",
			`x.yaml: bad\nkey\a: unknown field`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, err := Decode("/m/x.yaml", []byte(tc.data))
			if pods != nil {
				t.Errorf("got pods")
			}
			if got := errString(err); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if err != nil {
				assertOneLinePerError(t, err)
			}
		})
	}
}

func TestDecodeAnnotationsAndUID(t *testing.T) {
	doc := podDocNamed("a")
	pod := mustDecodeString(t, "/etc/podhost/manifests/a.yaml", doc)[0]
	hash, err := SpecHash([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if Hash(pod) != hash || len(hash) != HashLen {
		t.Errorf("hash = %q, want SpecHash %q", Hash(pod), hash)
	}
	if got := pod.Annotations[wellknown.AnnotationConfigSource]; got != "/etc/podhost/manifests/a.yaml" {
		t.Errorf("config-source = %q", got)
	}
	identity, err := IdentityHash([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if pod.UID != PodUID("default", "a", identity) || Identity(pod) != identity {
		t.Errorf("UID = %s, identity %s, want PodUID(default, a, %s)", pod.UID, Identity(pod), identity)
	}
	if FullName(pod) != "default/a" {
		t.Errorf("FullName = %s", FullName(pod))
	}

	withUID := strings.Replace(doc, "  name: a\n", "  name: a\n  uid: 6f1c9a7e-0d4b-4f5e-9a39-1c2d3e4f5a6b\n", 1)
	pod = mustDecodeString(t, "a.yaml", withUID)[0]
	if pod.UID != "6f1c9a7e-0d4b-4f5e-9a39-1c2d3e4f5a6b" {
		t.Errorf("metadata.uid not kept: %s", pod.UID)
	}

	// User annotations stay; podhost's own are overwritten.
	forged := strings.Replace(doc, "  name: a\n", "  name: a\n  annotations:\n    podhost.io/config-hash: forged\n    keep: me\n", 1)
	pod = mustDecodeString(t, "a.yaml", forged)[0]
	if Hash(pod) == "forged" || pod.Annotations["keep"] != "me" {
		t.Errorf("annotations = %v", pod.Annotations)
	}
}

func TestDecodeKubectlOutput(t *testing.T) {
	// What `kubectl get pod -o yaml` prints decodes; status is dropped.
	doc := `apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: "2024-05-01T10:00:00Z"
  name: a
  namespace: prod
  resourceVersion: "12345"
  uid: 0b5c7f9e-1111-4222-8333-944455556666
  managedFields:
  - manager: kubectl
    operation: Update
    time: "2024-05-01T10:00:00Z"
    fieldsV1: {"f:spec": {}}
spec:
  containers:
  - name: c
    image: busybox:1.36
  nodeName: node-1
  enableServiceLinks: true
  preemptionPolicy: PreemptLowerPriority
  priority: 0
  serviceAccountName: default
status:
  phase: Running
  podIP: 10.0.0.5
`
	pod := mustDecodeString(t, "a.yaml", doc)[0]
	if pod.Status.Phase != "" {
		t.Errorf("status kept: %+v", pod.Status)
	}
	if len(pod.ManagedFields) != 1 { // server-side apply's, kept for the kube API
		t.Errorf("managed fields: %+v", pod.ManagedFields)
	}
	if pod.Namespace != "prod" || pod.ResourceVersion != "12345" {
		t.Errorf("metadata lost: %+v", pod.ObjectMeta)
	}
}

func TestDecodeYAMLFeatures(t *testing.T) {
	doc := `apiVersion: v1
kind: Pod
metadata: {name: anchors}
spec:
  containers:
  - &base
    name: a
    image: busybox:1.36
    command: [sleep, "3600"]
  - <<: *base
    name: b
`
	pods := mustDecodeString(t, "x.yaml", doc)
	cs := pods[0].Spec.Containers
	if len(cs) != 2 || cs[1].Name != "b" || cs[1].Image != "busybox:1.36" || len(cs[1].Command) != 2 {
		t.Errorf("merge key not applied: %+v", cs)
	}
	// A flow mapping that is YAML but not JSON.
	flow := `{apiVersion: v1, kind: Pod, metadata: {name: flow}, spec: {containers: [{name: c, image: "busybox:1"}]}}`
	if pods := mustDecodeString(t, "x.yaml", flow); pods[0].Name != "flow" {
		t.Errorf("flow mapping: %+v", pods[0])
	}
	// CRLF line endings and a BOM.
	crlf := "\xef\xbb\xbf" + strings.ReplaceAll(podDocNamed("a")+"---\r\n"+podDocNamed("b"), "\n", "\r\n")
	if pods := mustDecodeString(t, "x.yaml", crlf); len(pods) != 2 {
		t.Errorf("CRLF: got %d pods", len(pods))
	}
}

func TestErrorCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(podDocNamed("a"))
	for i := range 40 {
		b.WriteString("unknown" + string(rune('A'+i)) + ": 1\n")
	}
	_, err := Decode("x.yaml", []byte(b.String()))
	list, ok := err.(ErrorList)
	if !ok || len(list) != maxErrors+1 {
		t.Fatalf("got %d errors, want %d", len(list), maxErrors+1)
	}
	if got := list[maxErrors].Error(); got != "x.yaml: ... and 10 more errors" {
		t.Errorf("last line = %q", got)
	}
}

func TestFieldErrorFormat(t *testing.T) {
	cases := []struct {
		e    FieldError
		want string
	}{
		{FieldError{File: "web.yaml", Field: "spec.containers[0].image", Detail: "Required value"}, "web.yaml: spec.containers[0].image: Required value"},
		{FieldError{File: "web.yaml", Doc: 2, Field: "spec", Detail: "x"}, "web.yaml: [doc 2] spec: x"},
		{FieldError{File: "web.yaml", Detail: "yaml: line 3: x"}, "web.yaml: yaml: line 3: x"},
		{FieldError{File: "w", Field: "a\nb", Detail: "c\td\xff\u2028\ufffd"}, "w: a\\nb: c\\td\\xff\\u2028\ufffd"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	list := ErrorList{&cases[0].e, &cases[1].e}
	if got := list.Error(); got != cases[0].want+"\n"+cases[1].want {
		t.Errorf("ErrorList = %q", got)
	}
	if got := DisplayName(""); got != "<input>" {
		t.Errorf("DisplayName(\"\") = %q", got)
	}
}

func TestReadFile(t *testing.T) {
	pods, err := ReadFile("testdata/good/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Annotations[wellknown.AnnotationConfigSource] != "testdata/good/web.yaml" {
		t.Errorf("got %+v", pods)
	}
	if _, err := ReadFile("testdata/none.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestReadFileFIFODoesNotHang(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo); done <- err }()
	select {
	case err := <-done:
		if !strings.Contains(errString(err), "pipe.yaml: not a regular file") {
			t.Errorf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadFile blocked on a FIFO")
	}
}

func TestReadFileSymlink(t *testing.T) {
	dir := t.TempDir()
	target, _ := filepath.Abs("testdata/good/web.yaml")
	link := filepath.Join(dir, "web.yaml")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(link); err != nil {
		t.Errorf("symlink to a manifest: %v", err)
	}
}

func TestDecodedPodIsComplete(t *testing.T) {
	pods, err := ReadFile("testdata/good/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := pods[0]
	if p.UID == "" || Hash(p) == "" || p.Namespace == "" {
		t.Errorf("pod lacks identity: %+v", p.ObjectMeta)
	}
}
