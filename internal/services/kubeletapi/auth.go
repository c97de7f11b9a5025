package kubeletapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// The kubelet's defaults (KubeletConfiguration authentication.webhook and
// authorization.webhook).
const (
	AuthnCacheTTL   = 2 * time.Minute
	AuthzAllowTTL   = 5 * time.Minute
	AuthzDenyTTL    = 30 * time.Second
	reviewTimeout   = 10 * time.Second
	clientCAPurpose = "client-ca-bundle"
)

// webhookBackoff is k8s.io/apiserver/pkg/server/options'
// DefaultAuthWebhookRetryBackoff, which the kubelet uses (that package
// links the whole generic API server).
func webhookBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// AuthConfig is what the kubelet's webhook authentication and
// authorization take.
type AuthConfig struct {
	// ClientCAFile: x509 client certificates signed by it authenticate
	// (CN the user, O the groups). "": none do.
	ClientCAFile string
	// Anonymous: requests without credentials are system:anonymous
	// (then authorized as any); off, they are 401.
	Anonymous bool
	// TokenReviews and SubjectAccessReviews are the API server's.
	TokenReviews authenticationv1.AuthenticationV1Interface
	Reviews      authorizationv1.AuthorizationV1Interface
}

// Auth authenticates and authorizes kubelet API requests as the kubelet's
// webhook modes do (pkg/kubelet/server/auth_builder.go), with
// k8s.io/apiserver's delegating authenticator and authorizer.
type Auth struct {
	authn    authenticator.Request
	authz    authorizer.UnconditionalAuthorizer
	clientCA *dynamiccertificates.DynamicFileCAContent // nil without a file
}

// NewAuth builds Auth; Run keeps the client CA file reloaded.
func NewAuth(c AuthConfig) (*Auth, error) {
	a := &Auth{}
	cfg := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                &apiserver.AnonymousAuthConfig{Enabled: c.Anonymous},
		CacheTTL:                 AuthnCacheTTL,
		TokenAccessReviewClient:  c.TokenReviews,
		TokenAccessReviewTimeout: reviewTimeout,
		WebhookRetryBackoff:      webhookBackoff(),
	}
	if c.ClientCAFile != "" {
		ca, err := dynamiccertificates.NewDynamicCAContentFromFile(clientCAPurpose, c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("cluster.clientCAFile %s: %w", c.ClientCAFile, err)
		}
		a.clientCA, cfg.ClientCertificateCAContentProvider = ca, ca
	}
	var err error
	if a.authn, _, err = cfg.New(); err != nil {
		return nil, fmt.Errorf("kubelet API authentication: %w", err)
	}
	a.authz, err = authorizerfactory.DelegatingAuthorizerConfig{SubjectAccessReviewClient: c.Reviews,
		AllowCacheTTL: AuthzAllowTTL, DenyCacheTTL: AuthzDenyTTL, WebhookRetryBackoff: webhookBackoff()}.New()
	if err != nil {
		return nil, fmt.Errorf("kubelet API authorization: %w", err)
	}
	return a, nil
}

// Run reloads the client CA file when it changes, until ctx ends.
func (a *Auth) Run(ctx context.Context) {
	if a.clientCA != nil {
		a.clientCA.Run(ctx, 1)
	}
}

// filter answers 401 to a request that does not authenticate and 403 to
// one the API server does not authorize, with the kubelet's texts
// (Server.InstallAuthFilter); else it calls next.
func (a *Auth) filter(node string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := a.authn.AuthenticateRequest(r)
		if err != nil || !ok {
			writeText(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs := requestAttributes(node, resp.User, r)
		var subresources []string
		for _, attr := range attrs {
			subresources = append(subresources, attr.GetSubresource())
			decision, _, err := a.authz.Authorize(r.Context(), attr)
			if err != nil {
				writeText(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					attr.GetUser().GetName(), attr.GetVerb(), attr.GetResource(), attr.GetSubresource()))
				return
			}
			if decision == authorizer.DecisionAllow {
				next.ServeHTTP(w, r)
				return
			}
		}
		writeText(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n",
			resp.User.GetName(), attrs[0].GetVerb(), attrs[0].GetResource(), subresources))
	})
}

// writeText is go-restful's WriteErrorString, which the kubelet answers
// with: the text as it is.
func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text)
}

// requestAttributes are the kubelet's (NodeAuthorizerAttributesGetter,
// fine-grained authorization, GA in 1.36): resource nodes, name the node,
// the verb from the method, the subresource from the path; /pods and
// /healthz are allowed by their own subresource or by proxy.
func requestAttributes(node string, u user.Info, r *http.Request) []authorizer.Attributes {
	verb := map[string]string{http.MethodPost: "create", http.MethodGet: "get", http.MethodPut: "update",
		http.MethodPatch: "patch", http.MethodDelete: "delete"}[r.Method]
	p := r.URL.Path
	var subresources []string
	switch {
	case isSubpath(p, "/allocatedPods"), isSubpath(p, "/pods"), isSubpath(p, "/runningpods/"):
		subresources = append(subresources, "pods")
	case isSubpath(p, "/healthz"):
		subresources = append(subresources, "healthz")
	case isSubpath(p, "/configz"):
		subresources = append(subresources, "configz")
	}
	switch {
	case isSubpath(p, "/stats/"):
		subresources = append(subresources, "stats")
	case isSubpath(p, "/metrics"):
		subresources = append(subresources, "metrics")
	case isSubpath(p, "/logs/"):
		subresources = append(subresources, "log")
	case isSubpath(p, "/checkpoint/"):
		subresources = append(subresources, "checkpoint")
	case isSubpath(p, "/statusz"):
		subresources = append(subresources, "statusz")
	case isSubpath(p, "/flagz"):
		subresources = append(subresources, "configz")
	default:
		subresources = append(subresources, "proxy")
	}
	attrs := make([]authorizer.Attributes, 0, len(subresources))
	for _, s := range subresources {
		attrs = append(attrs, authorizer.AttributesRecord{User: u, Verb: verb, APIVersion: "v1", Resource: "nodes",
			Subresource: s, Name: node, ResourceRequest: true, Path: p})
	}
	return attrs
}

// isSubpath is the kubelet's.
func isSubpath(subpath, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return subpath == path || (strings.HasPrefix(subpath, path) && subpath[len(path)] == '/')
}
