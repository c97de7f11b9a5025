//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/podhost/podhost/internal/testenv"
)

// bootstrapToken sets the control plane up for `podhost join --token` as
// kubeadm init sets a cluster up: a bootstrap token Secret in kube-system,
// the system:bootstrappers group bound to system:node-bootstrapper (may
// create CSRs), and kube-public/cluster-info (the API server and its CA)
// readable anonymously, signed with the token (what the bootstrap signer
// of kube-controller-manager does: there is none here). The token.
func (c *clusterNode) bootstrapToken(ctx context.Context) string {
	c.t.Helper()
	const id, secret = "abcdef", "0123456789abcdef"
	must := func(_ any, err error) {
		c.t.Helper()
		if err != nil {
			c.t.Fatal(err)
		}
	}
	must(c.admin.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.BootstrapTokenSecretPrefix + id},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{bootstrapapi.BootstrapTokenIDKey: id, bootstrapapi.BootstrapTokenSecretKey: secret,
			bootstrapapi.BootstrapTokenUsageAuthentication: "true", bootstrapapi.BootstrapTokenUsageSigningKey: "true"},
	}, metav1.CreateOptions{}))
	must(c.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "podhost-test-bootstrappers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: bootstrapapi.BootstrapDefaultGroup}},
	}, metav1.CreateOptions{}))
	ca, err := os.ReadFile(c.kube.CAFile)
	if err != nil {
		c.t.Fatal(err)
	}
	info := clientcmdapi.NewConfig()
	info.Clusters[""] = &clientcmdapi.Cluster{Server: c.kube.URL, CertificateAuthorityData: ca}
	content, err := clientcmd.Write(*info)
	if err != nil {
		c.t.Fatal(err)
	}
	sig, err := jws.ComputeDetachedSignature(string(content), id, secret)
	if err != nil {
		c.t.Fatal(err)
	}
	must(c.admin.CoreV1().ConfigMaps(metav1.NamespacePublic).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo},
		Data:       map[string]string{bootstrapapi.KubeConfigKey: string(content), bootstrapapi.JWSSignatureKeyPrefix + id: sig},
	}, metav1.CreateOptions{}))
	must(c.admin.RbacV1().Roles(metav1.NamespacePublic).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "podhost-test-cluster-info"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{bootstrapapi.ConfigMapClusterInfo}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}))
	must(c.admin.RbacV1().RoleBindings(metav1.NamespacePublic).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "podhost-test-cluster-info"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "podhost-test-cluster-info"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:anonymous"}},
	}, metav1.CreateOptions{}))
	return id + "." + secret
}

// caCertHash is kubeadm's --discovery-token-ca-cert-hash of the control
// plane's CA.
func (c *clusterNode) caCertHash() string {
	c.t.Helper()
	certs, err := certutil.CertsFromFile(c.kube.CAFile)
	if err != nil {
		c.t.Fatal(err)
	}
	sum := sha256.Sum256(certs[0].RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// approveAndSign acts as the cluster's CSR approver and signer (no
// kube-controller-manager runs): every kubelet client CSR a bootstrap
// token user or the node itself makes is approved and signed with the
// cluster's CA, valid for what validity says, until ctx ends. The CSRs it
// signed go to signed.
func (c *clusterNode) approveAndSign(ctx context.Context, validity func() (notBefore, notAfter time.Time), signed chan<- *certificatesv1.CertificateSigningRequest) {
	csrs := c.admin.CertificatesV1().CertificateSigningRequests()
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := csrs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, r := range l.Items {
			if len(r.Status.Certificate) > 0 || r.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName ||
				!strings.HasPrefix(r.Spec.Username, bootstrapapi.BootstrapUserPrefix) && r.Spec.Username != "system:node:"+c.name {
				continue
			}
			r.Status.Conditions = append(r.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "PodhostTest", Message: "approved by the test"})
			approved, err := csrs.UpdateApproval(ctx, r.Name, &r, metav1.UpdateOptions{})
			if err != nil {
				continue
			}
			notBefore, notAfter := validity()
			cert, err := c.kube.SignCSR(approved.Spec.Request, notBefore, notAfter)
			if err != nil {
				c.t.Errorf("sign CSR %s: %v", r.Name, err)
				return true, nil
			}
			approved.Status.Certificate = cert
			if done, err := csrs.UpdateStatus(ctx, approved, metav1.UpdateOptions{}); err == nil {
				signed <- done
			}
		}
		return false, nil
	})
}

// join runs `podhost join` with args (and the daemon's config and state
// dir): its exit code, stdout and stderr.
func (c *clusterNode) join(args ...string) (int, string, string) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(env.PodhostBin, append([]string{"--config", c.configPath, "join", "--state-dir", c.stateDir, "--start=false"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil && !errors.As(err, new(*exec.ExitError)) {
		c.t.Fatalf("podhost join: %v", err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestClusterJoinBootstrapToken: `podhost join --token --ca-cert-hash`
// does the kubelet's TLS bootstrap against a real kube-apiserver (the test
// approving and signing the CSR, as kube-controller-manager would), writes
// the node's kubeconfig and the config's cluster: section, and the node
// registers with the issued certificate and is Ready. A wrong hash, a bad
// token and an API server that is not there are one line and exit 1,
// with the config untouched.
func TestClusterJoinBootstrapToken(t *testing.T) {
	c := newUnjoinedClusterNode(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token := c.bootstrapToken(ctx)
	hash := c.caCertHash()
	before, err := os.ReadFile(c.configPath)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(filepath.Dir(c.configPath), "cluster.kubeconfig")

	wrongHash := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"hash mismatch", "does not match --ca-cert-hash", []string{"--server", c.kube.URL, "--token", token, "--ca-cert-hash", wrongHash}},
		{"unknown token", "not signed for token id", []string{"--server", c.kube.URL, "--token", "zzzzzz.0123456789abcdef", "--ca-cert-hash", hash}},
		{"no hash", "--ca-cert-hash", []string{"--server", c.kube.URL, "--token", token}},
		{"unreachable", "connection refused", []string{"--server", fmt.Sprintf("https://127.0.0.1:%d", testenv.FreePort(t)), "--token", token, "--ca-cert-hash", hash}},
	} {
		code, _, stderr := c.join(append(tc.args, "--node-name", c.name)...)
		if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q: want 1 and one line with %q", tc.name, code, stderr, tc.want)
		}
		if after, _ := os.ReadFile(c.configPath); !bytes.Equal(after, before) {
			t.Errorf("%s: the config changed:\n%s", tc.name, after)
		}
		if _, err := os.Stat(kubeconfig); err == nil {
			t.Errorf("%s: %s was written", tc.name, kubeconfig)
		}
	}

	// The bootstrap's certificate lasts 90 s more and began 5 min ago: the
	// rotation's deadline (70–90 % of its life) is at most 51 s after it
	// is signed. The next ones last a day.
	var firstExpiry time.Time
	validity := func() (time.Time, time.Time) {
		now := time.Now()
		if firstExpiry.IsZero() {
			firstExpiry = now.Add(90 * time.Second)
			return now.Add(-5 * time.Minute), firstExpiry
		}
		return now.Add(-time.Minute), now.Add(24 * time.Hour)
	}
	signed := make(chan *certificatesv1.CertificateSigningRequest, 4)
	go c.approveAndSign(ctx, validity, signed)
	code, stdout, stderr := c.join("--server", c.kube.URL, "--token", token, "--ca-cert-hash", hash, "--node-name", c.name)
	if code != 0 {
		t.Fatalf("podhost join: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	t.Logf("podhost join: %s", stdout)
	select {
	case r := <-signed:
		if r.Spec.Username != "system:bootstrap:abcdef" {
			t.Errorf("CSR made by %q, want the bootstrap token's user", r.Spec.Username)
		}
	default:
		t.Error("podhost join succeeded without a CSR signed")
	}
	if st, err := os.Stat(kubeconfig); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig %s: %v, mode %v: want 0600", kubeconfig, err, st)
	}
	after, err := os.ReadFile(c.configPath)
	if err != nil || !bytes.HasPrefix(after, []byte(strings.TrimSpace(string(before))[:20])) ||
		!strings.Contains(string(after), kubeconfig) || !strings.Contains(string(after), c.name) {
		t.Fatalf("config after join (%v):\n%s", err, after)
	}

	c.start()
	c.poll(90*time.Second, "Node "+c.name+" Ready with the issued certificate", func(ctx context.Context) (bool, error) {
		n, err := c.admin.CoreV1().Nodes().Get(ctx, c.name, metav1.GetOptions{})
		return err == nil && nodeReady(n), err
	})
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "--kubeconfig", c.kube.AdminKubeconfig, "get", "nodes", c.name, "--no-headers").CombinedOutput()
		if err != nil || !strings.Contains(string(out), " Ready ") {
			t.Errorf("kubectl get nodes: %v: %s", err, out)
		}
	}
	c.checkRotation(signed, firstExpiry)
}

// checkRotation: podhost-cluster asks for a new certificate (as the node)
// before the bootstrap's one expires, stores it as kubelet-client-current,
// and goes on renewing the Lease with it once the first one has expired.
func (c *clusterNode) checkRotation(signed <-chan *certificatesv1.CertificateSigningRequest, firstExpiry time.Time) {
	c.t.Helper()
	select {
	case r := <-signed:
		if r.Spec.Username != "system:node:"+c.name {
			c.t.Errorf("rotation CSR made by %q, want the node", r.Spec.Username)
		}
	case <-time.After(firstExpiry.Sub(time.Now()) + 60*time.Second*waitScale):
		c.t.Fatalf("no CSR to rotate the client certificate expiring at %v\npodhost-cluster log:\n%s", firstExpiry, c.agentLogs())
	}
	current := filepath.Join(c.stateDir, "cluster", "pki", "kubelet-client-current.pem")
	c.poll(30*time.Second, "kubelet-client-current.pem: the rotated certificate", func(context.Context) (bool, error) {
		certs, err := certutil.CertsFromFile(current)
		return err == nil && certs[0].NotAfter.After(firstExpiry.Add(time.Hour)), err
	})
	expired := time.Until(firstExpiry) + 2*time.Second
	time.Sleep(max(expired, 0)) // until the first certificate is no longer valid: a time, not a condition
	leases := c.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	c.poll(40*time.Second, "Lease renewed after the first certificate expired", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, c.name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(firstExpiry), err
	})
}
