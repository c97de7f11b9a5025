package manifest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const dataDocs = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  a.conf: "x=1"
binaryData:
  b.bin: AAEC
immutable: true
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: prod
data:
  user: YWRtaW4=
  pass: b2xk
stringData:
  pass: new
---
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: web
    image: busybox
    envFrom:
    - configMapRef: {name: app}
`

func TestDecodeObjects(t *testing.T) {
	objs, err := DecodeObjects("d.yaml", []byte(dataDocs))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Pods) != 1 || len(objs.ConfigMaps) != 1 || len(objs.Secrets) != 1 {
		t.Fatalf("got %d pods, %d configmaps, %d secrets", len(objs.Pods), len(objs.ConfigMaps), len(objs.Secrets))
	}
	cm := objs.ConfigMaps[0]
	if cm.Namespace != "default" || cm.Data["a.conf"] != "x=1" || string(cm.BinaryData["b.bin"]) != "\x00\x01\x02" ||
		cm.Immutable == nil || !*cm.Immutable {
		t.Errorf("configmap: %+v", cm)
	}
	sec := objs.Secrets[0]
	if sec.Type != corev1.SecretTypeOpaque || string(sec.Data["user"]) != "admin" || string(sec.Data["pass"]) != "new" || sec.StringData != nil {
		t.Errorf("secret: stringData must win and be merged: %+v", sec)
	}
	pods, err := Decode("d.yaml", []byte(dataDocs))
	if err != nil || len(pods) != 1 {
		t.Errorf("Decode: %d pods, %v", len(pods), err)
	}
}

func TestDecodeDataErrors(t *testing.T) {
	cm := func(body string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n" + body }
	sec := func(body string) string { return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n" + body }
	for _, tc := range []struct{ name, doc, want string }{
		{"key with slash", cm("data:\n  a/b: x\n"), `x.yaml: data[a/b]: Invalid value: "a/b": a valid config key`},
		{"key dotdot", cm("data:\n  ..x: x\n"), `x.yaml: data[..x]: Invalid value: "..x": must not start with '..'`},
		{"data and binaryData", cm("data:\n  k: x\nbinaryData:\n  k: AA==\n"), `x.yaml: binaryData[k]: Invalid value: "k": duplicate of key present in data`},
		{"too big", cm("data:\n  k: " + strings.Repeat("x", 700<<10) + "\n  l: " + strings.Repeat("y", 400<<10) + "\n"), `file is`},
		{"bad base64 not echoed", sec("data:\n  pw: sup3r-s3cret!\n"), "x.yaml: data[pw]: Invalid value: not valid base64 (value not shown; use stringData for plain text)"},
		{"stringData number", sec("stringData:\n  pw: 1234\n"), "x.yaml: stringData[pw]: Invalid value: expected a string (value not shown), got a number"},
		{"tls needs keys", sec("type: kubernetes.io/tls\nstringData:\n  tls.crt: c\n"), "x.yaml: data[tls.key]: Required value: required for a Secret of type kubernetes.io/tls"},
		{"basic-auth", sec("type: kubernetes.io/basic-auth\n"), "x.yaml: data[username]: Required value: username or password is required"},
		{"dockerconfigjson", sec("type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: nope\n"), `x.yaml: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": not a JSON object`},
		{"type", sec("type: kubernetes.io/service-account-token\n"), `x.yaml: type: Unsupported value: "kubernetes.io/service-account-token": not supported by podhost`},
		{"unknown field", cm("dat:\n  k: v\n"), `x.yaml: dat: unknown field`},
		{"duplicate", cm("") + "---\n" + cm(""), `x.yaml: [doc 2] metadata.name: Duplicate value: ConfigMap "default/c"`},
		{"name", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: C_1\n", `x.yaml: metadata.name: Invalid value: "C_1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := DecodeObjects("x.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("no error; got %+v", objs)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got  %s\nwant %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows the secret value: %s", err)
			}
			assertOneLinePerError(t, err)
		})
	}
}
