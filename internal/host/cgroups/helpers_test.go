package cgroups

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return strings.TrimSpace(string(b))
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	if got := readTrim(t, path); got != want {
		t.Errorf("%s = %q, want %q", path, got, want)
	}
}

func assertMissing(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s still exists (err=%v)", path, err)
	}
}

// res builds a ResourceRequirements from "cpu=100m,memory=64Mi" strings.
func res(requests, limits string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

func list(s string) corev1.ResourceList {
	if s == "" {
		return nil
	}
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func podWith(rs ...corev1.ResourceRequirements) *corev1.Pod {
	p := &corev1.Pod{}
	for i, r := range rs {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
	}
	return p
}
