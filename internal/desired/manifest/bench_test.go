package manifest

import (
	"encoding/json"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// go test -run='^$' -bench=. -benchmem ./internal/desired/manifest
//
// BenchmarkDecodeTypicalPod is decode + strict schema check + defaulting +
// validation + hash + UID of testdata/good/web.yaml (2 containers with
// resources, ports, volumes, env and probes). The floor is what a plain
// sigs.k8s.io/yaml Unmarshal into a Pod costs on the same bytes (no
// strictness, no paths, no defaults, no validation, no hash); compare the
// two within one run.

func readTypical(b *testing.B) []byte {
	data, err := os.ReadFile("testdata/good/web.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkDecodeTypicalPod(b *testing.B) {
	data := readTypical(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode("web.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTypicalPodJSON(b *testing.B) {
	js, err := yaml.YAMLToJSON(readTypical(b))
	if err != nil {
		b.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		b.Fatal(err)
	}
	data, _ := json.MarshalIndent(v, "", "  ")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode("web.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloorSigsYAMLUnmarshal(b *testing.B) {
	data := readTypical(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var pod corev1.Pod
		if err := yaml.Unmarshal(data, &pod); err != nil {
			b.Fatal(err)
		}
	}
}
