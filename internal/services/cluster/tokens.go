package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Service account tokens of the pods from the API server, as the
// kubelet's token manager (pkg/kubelet/token) gets them: a TokenRequest
// for the pod's ServiceAccount bound to the pod, with the projection's
// audience and expirationSeconds, cached per pod, ServiceAccount,
// audience and expiration, and asked again once 80% of its TTL has
// passed or it is 24 h old. podhost-cluster hands a token to the daemon
// as a Secret in the pod's file and the projection as a secret source of
// that Secret (tokenSources): the daemon rewrites the mounted file when
// the Secret changes, without restarting the pod (decisions.md 33).

const (
	// tokenMaxTTL and tokenMaxJitter are the token manager's maxTTL and
	// maxJitter.
	tokenMaxTTL    = 24 * time.Hour
	tokenMaxJitter = 10 * time.Second
	// TokenSecretPrefix starts the name of a token's Secret in a pod's
	// file; tokenKey is its key.
	TokenSecretPrefix = "podhost-sa-token-"
	tokenKey          = "token"
)

// tokenRequester is the part of the API server the cache asks.
type tokenRequester interface {
	CreateToken(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// tokenCache holds the current token of every projection of the pods
// from the API server; entries of a pod go with it (prune).
type tokenCache struct {
	api tokenRequester
	now func() time.Time

	mu     sync.Mutex
	tokens map[string]tokenEntry // by tokenSecretName
}

type tokenEntry struct {
	pod types.UID
	tr  *authenticationv1.TokenRequest
}

func newTokenCache(api tokenRequester) *tokenCache {
	return &tokenCache{api: api, now: time.Now, tokens: map[string]tokenEntry{}}
}

// serviceAccount is p's ServiceAccount (the API server defaults it to
// default).
func serviceAccount(p *corev1.Pod) string {
	if p.Spec.ServiceAccountName != "" {
		return p.Spec.ServiceAccountName
	}
	return "default"
}

// tokenSecretName names the Secret holding the token of projection s of
// p: a hash of what the token manager keys its cache by, so that it is
// stable while those are (the pod is not restarted for a new token) and
// no other pod's.
func tokenSecretName(p *corev1.Pod, s *corev1.ServiceAccountTokenProjection) string {
	exp := int64(0)
	if s.ExpirationSeconds != nil {
		exp = *s.ExpirationSeconds
	}
	h := sha256.Sum256([]byte(string(p.UID) + "\x00" + serviceAccount(p) + "\x00" + s.Audience + "\x00" + strconv.FormatInt(exp, 10)))
	return TokenSecretPrefix + hex.EncodeToString(h[:12])
}

// get returns the token of projection s of p, asking the API server for
// one when there is none or the cached one needs a refresh. A failed
// refresh keeps a cached token that has not expired, as the kubelet does.
func (c *tokenCache) get(ctx context.Context, p *corev1.Pod, s *corev1.ServiceAccountTokenProjection) (string, error) {
	name := tokenSecretName(p, s)
	c.mu.Lock()
	e, ok := c.tokens[name]
	c.mu.Unlock()
	if ok && !c.requiresRefresh(e.tr) {
		return e.tr.Status.Token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: s.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID},
	}}
	if s.Audience != "" { // none: the API server's own audiences
		req.Spec.Audiences = []string{s.Audience}
	}
	tr, err := c.api.CreateToken(ctx, p.Namespace, serviceAccount(p), req)
	if err == nil && tr.Spec.ExpirationSeconds == nil {
		err = fmt.Errorf("the API server's token has no expirationSeconds")
	}
	if err != nil {
		if ok && c.now().Before(e.tr.Status.ExpirationTimestamp.Time) {
			return e.tr.Status.Token, nil
		}
		return "", fmt.Errorf("token of service account %s/%s: %w", p.Namespace, serviceAccount(p), err)
	}
	c.mu.Lock()
	c.tokens[name] = tokenEntry{pod: p.UID, tr: tr}
	c.mu.Unlock()
	return tr.Status.Token, nil
}

// requiresRefresh is the token manager's: 24 h after it was issued, or
// within 20% of its TTL of its expiry, less a jitter of up to 10 s.
func (c *tokenCache) requiresRefresh(tr *authenticationv1.TokenRequest) bool {
	now := c.now()
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	iat := exp.Add(-ttl)
	jitter := time.Duration(rand.Float64()*tokenMaxJitter.Seconds()) * time.Second
	if now.After(iat.Add(tokenMaxTTL - jitter)) {
		return true
	}
	return now.After(exp.Add(-ttl*20/100 - jitter))
}

// prune forgets the tokens of pods not in keep (UIDs of the pods from the
// API server that run or will): the cache is bounded by the node's pods.
func (c *tokenCache) prune(keep map[types.UID]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, e := range c.tokens {
		if !keep[e.pod] {
			delete(c.tokens, name)
		}
	}
}

// tokenSources returns p with every serviceAccountToken projection
// replaced by a secret source of its token's Secret (the projection's
// path as the item's path; the projected volume's defaultMode applies,
// as to the kubelet's token file), and those Secrets. p is not changed.
func (c *tokenCache) tokenSources(ctx context.Context, p *corev1.Pod) (*corev1.Pod, []*corev1.Secret, error) {
	var out *corev1.Pod
	var secrets []*corev1.Secret
	seen := map[string]bool{}
	for vi, v := range p.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for si, src := range v.Projected.Sources {
			tp := src.ServiceAccountToken
			if tp == nil {
				continue
			}
			token, err := c.get(ctx, p, tp)
			if err != nil {
				return nil, nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			if out == nil {
				out = p.DeepCopy()
			}
			name := tokenSecretName(p, tp)
			out.Spec.Volumes[vi].Projected.Sources[si] = corev1.VolumeProjection{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: name},
				Items:                []corev1.KeyToPath{{Key: tokenKey, Path: tp.Path}}}}
			if !seen[name] {
				seen[name] = true
				secrets = append(secrets, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace},
					Data:       map[string][]byte{tokenKey: []byte(token)}, Type: corev1.SecretTypeOpaque})
			}
		}
	}
	if out == nil {
		return p, nil, nil
	}
	return out, secrets, nil
}

// clientTokens is tokenRequester on the node's client.
type clientTokens struct{ a *Agent }

func (t clientTokens) CreateToken(ctx context.Context, namespace, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return t.a.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
}
