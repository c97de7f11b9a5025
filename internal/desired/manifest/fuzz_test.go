package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slowDecode flags inputs that are pathologically slow to decode. Inputs
// are small (the fuzzer's are a few KB), so this is generous even on a
// loaded machine.
const slowDecode = 2 * time.Second

// FuzzDecode checks that decoding, defaulting and validation never panic,
// and that results keep their contracts: errors are an ErrorList of
// one-line messages naming the file; pods carry a UID and their document's
// spec hash, and pass validation again.
//
//	go test -run='^$' -fuzz=FuzzDecode -fuzztime=60s ./internal/desired/manifest
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
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		pods, err := Decode("/m/f.yaml", data)
		if d := time.Since(start); d > slowDecode {
			t.Fatalf("Decode of %d bytes took %v", len(data), d)
		}
		if err != nil {
			if pods != nil {
				t.Fatalf("pods and an error")
			}
			list, ok := err.(ErrorList)
			if !ok || len(list) == 0 {
				t.Fatalf("error is %T %v, want a non-empty ErrorList", err, err)
			}
			for _, fe := range list {
				msg := fe.Error()
				if strings.ContainsAny(msg, "\n\r") || !strings.HasPrefix(msg, "f.yaml: ") {
					t.Fatalf("bad error line %q", msg)
				}
			}
			return
		}
		docs, err := Docs(data)
		if err != nil || len(docs) != len(pods) {
			t.Fatalf("Docs: %d docs, %v; Decode: %d pods", len(docs), err, len(pods))
		}
		for i, pod := range pods {
			if pod.UID == "" || pod.Namespace == "" {
				t.Fatalf("pod without identity: %+v", pod.ObjectMeta)
			}
			if h, err := SpecHash(docs[i]); err != nil || h != Hash(pod) {
				t.Fatalf("SpecHash(doc %d) = %s, %v; pod hash %s", i, h, err, Hash(pod))
			}
			if e := validatePod(pod); len(e) > 0 {
				t.Fatalf("decoded pod does not validate: %v", finish("f.yaml", e))
			}
		}
	})
}
