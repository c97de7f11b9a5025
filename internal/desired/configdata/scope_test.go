package configdata

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// TestScopeOwnerChangeWakesPods: when a name passes to another source
// (its owner's declaration went away, another source's takes over) with
// the same data, Replace reports it, so that the pods waiting for it in
// the new owner's scope are woken; the API's lists show every object
// whatever its scope.
func TestScopeOwnerChangeWakesPods(t *testing.T) {
	scope := func(src string) string { return strings.SplitN(src, ":", 2)[0] }
	s := NewStore(scope)
	from := func(src string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db",
			Annotations: map[string]string{wellknown.AnnotationConfigSource: src}}, Data: map[string][]byte{"k": []byte("v")}}
	}
	urlPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{wellknown.AnnotationConfigSource: "url:pods.yaml"}}}
	s.Replace(nil, []*corev1.Secret{from("dir:a.yaml")})
	if _, ok := s.For(urlPod).Secret("default", "db"); ok {
		t.Fatal("the URL's pod read the dir's Secret")
	}
	if got := s.Replace(nil, []*corev1.Secret{from("dir:b.yaml")}); len(got) != 0 {
		t.Errorf("another file of the same scope, same data: changed %v, want nothing", got)
	}
	if got := s.Replace(nil, []*corev1.Secret{from("url:pods.yaml")}); len(got) != 1 || got[0] != (Ref{Secret, "default", "db"}) {
		t.Errorf("owner moved to the URL: changed %v, want the Secret", got)
	}
	if _, ok := s.For(urlPod).Secret("default", "db"); !ok {
		t.Error("the URL's pod cannot read its own source's Secret")
	}
	if len(s.Secrets()) != 1 {
		t.Errorf("Secrets() = %d objects, want every object (the kube API lists them all)", len(s.Secrets()))
	}
}
