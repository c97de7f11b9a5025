package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeTokens issues numbered tokens valid for the asked expirationSeconds
// from now(), and records the requests.
type fakeTokens struct {
	now  func() time.Time
	reqs []string
	fail error
}

func (f *fakeTokens) CreateToken(_ context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	r := tr.Spec.BoundObjectRef
	f.reqs = append(f.reqs, fmt.Sprintf("%s/%s aud=%v exp=%d bound=%s/%s/%s/%s", ns, sa, tr.Spec.Audiences, *tr.Spec.ExpirationSeconds, r.APIVersion, r.Kind, r.Name, r.UID))
	out := tr.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(f.reqs)),
		ExpirationTimestamp: metav1.NewTime(f.now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
	return out, nil
}

// kubeAPIAccess is the volume the ServiceAccount admission plugin adds.
func kubeAPIAccess(audience string, exp int64) corev1.Volume {
	mode := int32(0o644)
	return corev1.Volume{Name: "kube-api-access-x1", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: audience, ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}}
}

func newFakeTokens() (*tokenCache, *fakeTokens, *time.Time) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &fakeTokens{now: func() time.Time { return now }}
	c := newTokenCache(f)
	c.now = f.now
	return c, f, &now
}

// TestTokenSourcesAsTheKubelet: a token projection becomes a secret source
// of a Secret holding the token, asked for the pod's ServiceAccount, bound
// to the pod, with the projection's audience and expiration; the token is
// cached until 80% of its TTL has passed (less the jitter), then asked
// again under the same Secret name (the pod's spec does not change).
func TestTokenSourcesAsTheKubelet(t *testing.T) {
	c, f, now := newFakeTokens()
	p := apiPod("web")
	p.Spec.ServiceAccountName = "builder"
	p.Spec.Volumes = append(p.Spec.Volumes, kubeAPIAccess("", 3607))
	out, secrets, err := c.tokenSources(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Volumes[2].Projected.Sources[0].ServiceAccountToken == nil {
		t.Error("the API's pod was changed")
	}
	src := out.Spec.Volumes[2].Projected.Sources
	if src[0].Secret == nil || len(src) != 2 || src[1].ConfigMap == nil {
		t.Fatalf("sources %+v, want the token's secret then the configMap", src)
	}
	if len(secrets) != 1 || secrets[0].Name != src[0].Secret.Name || string(secrets[0].Data["token"]) != "token-1" ||
		!strings.HasPrefix(secrets[0].Name, TokenSecretPrefix) || src[0].Secret.Items[0] != (corev1.KeyToPath{Key: "token", Path: "token"}) {
		t.Fatalf("secrets %+v for source %+v", secrets, src[0].Secret)
	}
	if want := "default/builder aud=[] exp=3607 bound=v1/Pod/web/api-uid"; len(f.reqs) != 1 || f.reqs[0] != want {
		t.Errorf("requests %q, want %q", f.reqs, want)
	}
	*now = now.Add(2800 * time.Second) // 77%: 720 s + up to 10 s before expiry is not reached
	if _, secrets, _ = c.tokenSources(context.Background(), p); string(secrets[0].Data["token"]) != "token-1" || len(f.reqs) != 1 {
		t.Errorf("at 77%% of the TTL: %s after %d requests, want the cached token", secrets[0].Data["token"], len(f.reqs))
	}
	*now = now.Add(100 * time.Second) // 80.4%
	out2, secrets, _ := c.tokenSources(context.Background(), p)
	if string(secrets[0].Data["token"]) != "token-2" || out2.Spec.Volumes[2].Projected.Sources[0].Secret.Name != src[0].Secret.Name {
		t.Errorf("at 80%% of the TTL: %s in %s, want a new token in the same Secret", secrets[0].Data["token"], secrets[0].Name)
	}
}

// TestTokenRefreshAfter24h: a token of a long TTL is asked again after
// 24 h (the token manager's maxTTL), and a failed refresh keeps a token
// that has not expired.
func TestTokenRefreshAfter24h(t *testing.T) {
	c, f, now := newFakeTokens()
	p := apiPod("web")
	p.Spec.Volumes = []corev1.Volume{kubeAPIAccess("vault", 7*24*3600)}
	get := func() string {
		t.Helper()
		_, s, err := c.tokenSources(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return string(s[0].Data["token"])
	}
	get()
	if !strings.Contains(f.reqs[0], "aud=[vault]") {
		t.Errorf("request %q, want the projection's audience", f.reqs[0])
	}
	*now = now.Add(23 * time.Hour)
	if tok := get(); tok != "token-1" {
		t.Errorf("after 23 h: %s, want the cached token", tok)
	}
	*now = now.Add(time.Hour + time.Second)
	if tok := get(); tok != "token-2" {
		t.Errorf("after 24 h: %s, want a new token", tok)
	}
	*now = now.Add(24*time.Hour + time.Second)
	f.fail = errors.New("API server down")
	if tok := get(); tok != "token-2" {
		t.Errorf("refresh failed: %s, want the unexpired token", tok)
	}
	*now = now.Add(7 * 24 * time.Hour)
	if _, _, err := c.tokenSources(context.Background(), p); err == nil || !strings.Contains(err.Error(), "API server down") {
		t.Errorf("refresh failed after expiry: %v, want the error", err)
	}
}

// TestTokenCachePerPodAndPruned: two pods never share a token's Secret,
// and a pod's tokens go with it.
func TestTokenCachePerPodAndPruned(t *testing.T) {
	c, f, _ := newFakeTokens()
	a, b := apiPod("a"), apiPod("b")
	b.UID = "other-uid"
	for _, p := range []*corev1.Pod{a, b} {
		p.Spec.Volumes = []corev1.Volume{kubeAPIAccess("", 3607)}
	}
	_, sa, _ := c.tokenSources(context.Background(), a)
	_, sb, _ := c.tokenSources(context.Background(), b)
	if sa[0].Name == sb[0].Name || len(f.reqs) != 2 {
		t.Fatalf("secrets %s and %s after %d requests, want one each", sa[0].Name, sb[0].Name, len(f.reqs))
	}
	c.prune(map[types.UID]bool{"other-uid": true})
	if len(c.tokens) != 1 {
		t.Errorf("after the pod went: %d tokens cached, want 1", len(c.tokens))
	}
}

// TestAPIPodReferencingATokenSecretRefused: a pod naming another pod's
// token Secret is not handed to the daemon, and Failed in the API.
func TestAPIPodReferencingATokenSecretRefused(t *testing.T) {
	p := apiPod("thief")
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "t", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: TokenSecretPrefix + "0123"}}})
	dir := t.TempDir()
	b := &graceNode{dir: dir}
	b.ready = true
	m, client := newTestMirrors(t, b, p)
	m.a.opts.ClusterDir = dir
	m.reconcile(context.Background())
	if fileExists(m.a.podFile("default", "thief")) {
		t.Error("the pod was handed to the daemon")
	}
	got, err := client.CoreV1().Pods("default").Get(context.Background(), "thief", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodFailed || got.Status.Reason != ReasonRefused || !strings.Contains(got.Status.Message, "service account tokens") {
		t.Errorf("status %s %s %q, want Failed, refused", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
}
