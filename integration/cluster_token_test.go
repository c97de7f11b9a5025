//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClusterAPIPodServiceAccountToken: a pod the cluster binds to the
// node with the default automountServiceAccountToken gets the
// ServiceAccount admission plugin's kube-api-access volume and runs; in
// it the token is one the API server accepts (TokenReview: the
// namespace's default ServiceAccount, bound to the pod), ca.crt is the
// cluster's CA and namespace the pod's; a new token reaches the running
// pod's file without restarting it. Its environment holds the
// cluster's kubernetes Service (KUBERNETES_SERVICE_HOST its ClusterIP),
// not podhost's Services, and its resolv.conf the configured
// cluster.clusterDNS with the cluster's search path.
func TestClusterAPIPodServiceAccountToken(t *testing.T) {
	c := newClusterNode(t, "clusterDNS: [10.96.0.10]", "clusterDomain: cluster.test")
	c.start()
	ctx := context.Background()
	core := c.admin.CoreV1()
	// The test control plane has no kube-controller-manager: make what its
	// serviceaccount and root-ca-cert-publisher controllers would.
	if _, err := core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(c.kube.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := core.ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	created, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-sa"},
		Spec: corev1.PodSpec{NodeName: c.name, Containers: []corev1.Container{{Name: "c", Image: env.ImageRef,
			Command: []string{"sleep", "3600"}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(created.Spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "kube-api-access-") }) {
		t.Fatalf("the API server added no kube-api-access volume: %+v", created.Spec.Volumes)
	}
	c.waitRunning("api-sa")

	const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	read := func(f string) string {
		t.Helper()
		out, stderr, code := c.execCLI("", "api-sa", "--", "cat", dir+f)
		if code != 0 {
			t.Fatalf("cat %s in the pod: exit %d, %s", dir+f, code, stderr)
		}
		return out
	}
	if got := read("namespace"); got != "default" {
		t.Errorf("namespace file %q, want default", got)
	}
	if got := read("ca.crt"); got != string(ca) {
		t.Errorf("ca.crt in the pod is not the cluster's CA:\n%s", got)
	}
	token := read("token")
	tr, err := c.admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := tr.Status
	if !st.Authenticated || st.User.Username != "system:serviceaccount:default:default" {
		t.Fatalf("TokenReview of the pod's token: authenticated %v as %q (%s)", st.Authenticated, st.User.Username, st.Error)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-name"]; len(got) != 1 || got[0] != "api-sa" {
		t.Errorf("the token is bound to pod %v, want api-sa", got)
	}
	if got := st.User.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || got[0] != string(created.UID) {
		t.Errorf("the token is bound to pod UID %v, want %s", got, created.UID)
	}
	svc, err := core.Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := c.execCLI("", "api-sa", "--", "sh", "-c", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT; cat /etc/resolv.conf")
	if code != 0 {
		t.Fatalf("in the pod: exit %d, %s", code, stderr)
	}
	want := svc.Spec.ClusterIP + ":443\n"
	if !strings.HasPrefix(out, want) {
		t.Errorf("KUBERNETES_SERVICE_HOST:PORT in the pod: %q, want %q (the cluster's kubernetes Service)", out, want)
	}
	if !strings.Contains(out, "nameserver 10.96.0.10\n") || strings.Count(out, "nameserver") != 1 ||
		!strings.Contains(out, "search default.svc.cluster.test svc.cluster.test cluster.test") {
		t.Errorf("resolv.conf in the pod:\n%s\nwant the cluster's DNS 10.96.0.10 only and its search path", out)
	}

	// A new token (podhost-cluster restarted: its cache is empty, as at
	// a refresh) reaches the running pod's file without restarting it.
	before := c.pod("api-sa")
	c.stopAgent(syscall.SIGTERM)
	c.startAgent()
	var newToken string
	c.poll(60*time.Second, "a new token in the running pod", func(ctx context.Context) (bool, error) {
		out, stderr, code := c.execCLI("", "api-sa", "--", "cat", dir+"token")
		if code != 0 {
			return false, fmt.Errorf("cat the token: exit %d, %s", code, stderr)
		}
		newToken = out
		return out != token, nil
	})
	tr, err = c.admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: newToken}}, metav1.CreateOptions{})
	if err != nil || !tr.Status.Authenticated {
		t.Errorf("TokenReview of the new token: %v %+v", err, tr.Status)
	}
	after := c.pod("api-sa")
	if after.UID != before.UID || after.Status.ContainerStatuses[0].ContainerID != before.Status.ContainerStatuses[0].ContainerID ||
		after.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the pod was restarted for a new token: container %s → %s, restarts %d", before.Status.ContainerStatuses[0].ContainerID,
			after.Status.ContainerStatuses[0].ContainerID, after.Status.ContainerStatuses[0].RestartCount)
	}
	c.poll(60*time.Second, "the pod Running in the API", func(ctx context.Context) (bool, error) {
		p, err := core.Pods("default").Get(ctx, "api-sa", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
}
