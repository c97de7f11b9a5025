package manifest

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// slowDecode flags inputs that are pathologically slow to decode. Inputs
// are small (the fuzzer's are a few KB), so this is generous even on a
// loaded machine.
const slowDecode = 2 * time.Second

// The fuzz targets, one per kind a manifest holds (their seeds differ; the
// contracts checked are the same, checkDecode's):
//
//	go test -run='^$' -fuzz='^FuzzDecode$' -fuzztime=5m ./internal/desired/manifest
//	go test -run='^$' -fuzz='^FuzzDecodeConfigMap$' -fuzztime=5m ./internal/desired/manifest
//	go test -run='^$' -fuzz='^FuzzDecodeSecret$' -fuzztime=5m ./internal/desired/manifest
//	go test -run='^$' -fuzz='^FuzzExpandLists$' -fuzztime=5m ./internal/desired/manifest
//
// and the manifest URL's decoder, FuzzDecodeURL in internal/desired/source.

// FuzzDecode: pods (seeded with testdata/good, testdata/bad and pods).
func FuzzDecode(f *testing.F) {
	for _, pattern := range []string{"testdata/good/*", "testdata/bad/*"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte(podDocNamed("a") + "---\n" + podDocNamed("b")))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i:1"}]}}`))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("<<: {a: 1}\nb: 2\n"))
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}

// FuzzDecodeConfigMap: ConfigMaps, alone and beside pods.
func FuzzDecodeConfigMap(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: infra}\ndata: {a.conf: \"x=1\\n\", b: \"\"}\nbinaryData: {bin: AAEC}\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\nimmutable: true\ndata:\n  app.properties: |\n    a=1\n    b=2\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a":"b"}},"data":{"k":"v"}}`))
	f.Add([]byte(podDocNamed("a") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {\"../x\": v, k: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}

// FuzzDecodeSecret: Secrets of each type; their values must never show
// in an error.
func FuzzDecodeSecret(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: hunter2-correct-horse}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ntype: kubernetes.io/basic-auth\ndata: {username: YWRtaW4=, password: c2VjcmV0LXZhbHVlLTEyMzQ=}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: tls}\ntype: kubernetes.io/tls\nstringData: {tls.crt: CERTIFICATE-DATA-1234, tls.key: PRIVATE-KEY-DATA-5678}\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"reg"},"type":"kubernetes.io/dockerconfigjson","stringData":{".dockerconfigjson":"{\"auths\":{\"r.example\":{\"auth\":\"dXNlcjpwYXNzd29yZA==\"}}}"}}`))
	f.Add([]byte("apiVersion: v1\nkind: Secret\nmetadata: {name: bad}\ndata: {k: not-base64-secret-value!}\nstringData: {j: [not-a-string-secret]}\n"))
	f.Add([]byte(podDocNamed("a") + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: top-secret-value}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}

// FuzzExpandLists: v1 Lists (List, PodList, ConfigMapList, SecretList), as
// `get -o yaml` prints them and apply and the manifest URL flatten them;
// the flattened output must then keep Decode's contracts.
func FuzzExpandLists(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(podDocNamed("a")), "\n", "\n  ") + "\n"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"PodList","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i:1"}]}}]}`))
	f.Add([]byte("apiVersion: v1\nkind: SecretList\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {k: list-secret-value}}\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMapList\nitems: [{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: v}}]\n---\n" + podDocNamed("b")))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: []\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{kind: List}, 3]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := ExpandLists("/m/f.yaml", data)
		if err != nil {
			checkErrorList(t, err, data)
			return
		}
		if x.Origins != nil {
			if docs, err := Docs(x.Data); err == nil && len(docs) != len(x.Origins) {
				t.Fatalf("%d documents flattened, %d origins", len(docs), len(x.Origins))
			}
		}
		_, derr := DecodeObjects("/m/f.yaml", x.Data)
		if derr != nil {
			checkErrorList(t, x.Locate(derr), data)
			return
		}
		checkDecode(t, x.Data)
	})
}

// checkDecode checks DecodeObjects' contracts on any input: it ends in
// time; errors are an ErrorList of one-line messages naming the file and
// never quoting a Secret's value; on success every document is one object
// (a pod, ConfigMap or Secret) that keeps its kind's invariants, and a
// second decode gives the same hashes.
func checkDecode(t *testing.T, data []byte) {
	start := time.Now()
	objs, err := DecodeObjects("/m/f.yaml", data)
	if d := time.Since(start); d > slowDecode {
		t.Fatalf("DecodeObjects of %d bytes took %v", len(data), d)
	}
	if err != nil {
		if objs.Pods != nil || objs.ConfigMaps != nil || objs.Secrets != nil {
			t.Fatalf("objects and an error")
		}
		checkErrorList(t, err, data)
		return
	}
	docs, err := Docs(data)
	if n := objectCount(objs); err != nil || len(docs) != n {
		t.Fatalf("Docs: %d docs, %v; DecodeObjects: %d objects", len(docs), err, n)
	}
	pods := 0
	for i, doc := range docs {
		one, err := DecodeObjects("/m/f.yaml", doc)
		if err != nil || objectCount(one) != 1 {
			t.Fatalf("doc %d alone: %v, %+v", i, err, one)
		}
		if len(one.Workloads) == 1 { // its pods: workload_test.go
			pods += len(one.Pods)
			continue
		}
		if len(one.Pods) == 1 {
			checkPod(t, objs.Pods[pods], doc)
			pods++
		}
	}
	for _, cm := range objs.ConfigMaps {
		size := 0
		for k, v := range cm.Data {
			size += len(k) + len(v)
		}
		for k, v := range cm.BinaryData {
			size += len(k) + len(v)
		}
		checkData(t, cm.ObjectMeta, size, slices.Concat(slices.Collect(maps.Keys(cm.Data)), slices.Collect(maps.Keys(cm.BinaryData))))
	}
	for _, sec := range objs.Secrets {
		if sec.StringData != nil || !slices.Contains(secretTypes, sec.Type) {
			t.Fatalf("Secret %s: stringData %d keys, type %q", sec.Name, len(sec.StringData), sec.Type)
		}
		size := 0
		for k, v := range sec.Data {
			size += len(k) + len(v)
		}
		checkData(t, sec.ObjectMeta, size, slices.Collect(maps.Keys(sec.Data)))
	}
	again, err := DecodeObjects("/m/f.yaml", data)
	if err != nil || len(again.Pods) != len(objs.Pods) {
		t.Fatalf("second decode: %v", err)
	}
	for i, p := range again.Pods {
		if Hash(p) != Hash(objs.Pods[i]) || p.UID != objs.Pods[i].UID {
			t.Fatalf("second decode: pod %d hash %s uid %s, first %s %s", i, Hash(p), p.UID, Hash(objs.Pods[i]), objs.Pods[i].UID)
		}
	}
}

func checkPod(t *testing.T, pod *corev1.Pod, doc []byte) {
	t.Helper()
	if pod.UID == "" || pod.Namespace == "" {
		t.Fatalf("pod without identity: %+v", pod.ObjectMeta)
	}
	if h, err := SpecHash(doc); err != nil || h != Hash(pod) {
		t.Fatalf("SpecHash = %s, %v; pod hash %s", h, err, Hash(pod))
	}
	if e := validatePod(pod); len(e) > 0 {
		t.Fatalf("decoded pod does not validate: %v", finish("f.yaml", e))
	}
}

// checkData: a decoded ConfigMap or Secret has a name and namespace,
// valid keys and at most MaxDataSize bytes.
func checkData(t *testing.T, m metav1.ObjectMeta, size int, keys []string) {
	t.Helper()
	if m.Name == "" || m.Namespace == "" || size > MaxDataSize {
		t.Fatalf("%s/%s: %d bytes", m.Namespace, m.Name, size)
	}
	for _, k := range keys {
		if e := validateDataKey(field.NewPath("data").Key(k), k); len(e) > 0 {
			t.Fatalf("%s/%s: key %q accepted: %v", m.Namespace, m.Name, k, e)
		}
	}
}

// checkErrorList: a non-empty ErrorList of one-line messages naming the
// file, none quoting a Secret's value.
func checkErrorList(t *testing.T, err error, data []byte) {
	t.Helper()
	list, ok := err.(ErrorList)
	if !ok || len(list) == 0 {
		t.Fatalf("error is %T %v, want a non-empty ErrorList", err, err)
	}
	secrets := secretValues(data)
	for _, fe := range list {
		msg := fe.Error()
		if strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "f.yaml: ") {
			t.Fatalf("bad error line %q", msg)
		}
		for _, v := range secrets {
			if strings.Contains(msg, v) {
				t.Fatalf("error %q shows the Secret value %q", msg, v)
			}
		}
	}
}

// secretValues returns the values of the data and stringData of the
// Secrets in data that are long enough to be told apart (12 bytes) and
// appear only once in the input, so that an error can only have them
// from the value itself.
func secretValues(data []byte) []string {
	docs, err := Docs(data)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range docs {
		v, e := parseDoc(d, 1, nil)
		obj, ok := v.(map[string]any)
		if len(e) > 0 || !ok || obj["kind"] != KindSecret {
			continue
		}
		for _, f := range []string{"data", "stringData"} {
			m, _ := obj[f].(map[string]any)
			for _, val := range m {
				s, ok := val.(string)
				if ok && len(s) >= 12 && strings.Count(string(data), s) == 1 {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// objectCount is how many documents objs came from: a workload's pods are
// one document's.
func objectCount(objs Objects) int {
	n := len(objs.Pods) + len(objs.ConfigMaps) + len(objs.Secrets) + len(objs.Workloads)
	for _, w := range objs.Workloads {
		n -= len(w.Pods)
	}
	return n
}
