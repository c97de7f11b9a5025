package join

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
)

// clusterInfoServer serves kube-public/cluster-info with ca in its
// kubeconfig, signed with sign's token (nothing signed: ""), padded to
// pad bytes.
func clusterInfoServer(t *testing.T, ca []byte, signID, signSecret string, pad int) *httptest.Server {
	t.Helper()
	info := clientcmdapi.NewConfig()
	info.Clusters[""] = &clientcmdapi.Cluster{Server: "https://x", CertificateAuthorityData: ca}
	content, err := clientcmd.Write(*info)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic},
		Data:       map[string]string{bootstrapapi.KubeConfigKey: string(content), "pad": strings.Repeat("x", pad)}}
	if signID != "" {
		sig, err := jws.ComputeDetachedSignature(string(content), signID, signSecret)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[bootstrapapi.JWSSignatureKeyPrefix+signID] = sig
	}
	body, err := json.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/kube-public/configmaps/cluster-info" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// TestDiscoverCA: cluster-info's CA is taken only when it is signed with
// the token and its key matches --ca-cert-hash; an answer past 1 MiB is
// refused.
func TestDiscoverCA(t *testing.T) {
	ca, hash := selfSigned(t)
	_, other := selfSigned(t)
	const token = "abcdef.0123456789abcdef"
	for _, tc := range []struct {
		name, id, secret, hash string
		pad                    int
		want                   string
	}{
		{"signed and pinned", "abcdef", "0123456789abcdef", hash, 0, ""},
		{"another pin", "abcdef", "0123456789abcdef", other, 0, "does not match --ca-cert-hash"},
		{"signed with another secret", "abcdef", "fedcba9876543210", hash, 0, "signature does not match --token"},
		{"not signed for the token", "", "", hash, 0, "not signed for token id abcdef"},
		{"too large", "abcdef", "0123456789abcdef", hash, maxClusterInfo, "larger than"},
	} {
		s := clusterInfoServer(t, ca, tc.id, tc.secret, tc.pad)
		got, err := clusterCA(context.Background(), Options{Server: s.URL, Token: token, CACertHashes: []string{tc.hash}})
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if err == nil && string(got) != string(ca) {
			t.Errorf("%s: CA %q", tc.name, got)
		}
	}
}
