//go:build integration

package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestClusterKubeletAPI: kubectl logs, exec (with stdin), attach and
// port-forward through the cluster's API server reach a static pod (its
// mirror pod) and a pod the cluster bound to the node, through
// podhost-cluster's kubelet API; the Node publishes its port; the port
// answers 401 without credentials and 403 to a ServiceAccount the API
// server does not allow nodes/proxy (TokenReview and SubjectAccessReview
// asked), 200 to one allowed nodes/pods; /pods, /stats/summary and
// /metrics/resource answer the admin's client certificate with the node's
// pods and their usage; the self-signed serving key is root's alone.
func TestClusterKubeletAPI(t *testing.T) {
	c := newClusterNode(t)
	c.start()
	c.kubeconfig = c.kube.AdminKubeconfig // d.kubectl: the real kubectl against the cluster's API server
	ctx := context.Background()
	core := c.admin.CoreV1()

	c.writeManifest("static-web.yaml", webPod("static-web", ""))
	if _, err := core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err) // no controller manager here to make it
	}
	no := false
	if _, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-echo"},
		Spec: corev1.PodSpec{NodeName: c.name, AutomountServiceAccountToken: &no, Containers: []corev1.Container{{Name: "c",
			Image: env.ImageRef, Command: []string{"sh", "-c", "echo hello-from-api; exec sleep 3600"}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitMirrorRunning(c.waitRunning("static-web"), "")
	c.waitRunning("api-echo")
	c.poll(60*time.Second, "the Node's kubelet endpoint", func(ctx context.Context) (bool, error) {
		n, err := core.Nodes().Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return n.Status.DaemonEndpoints.KubeletEndpoint.Port == int32(c.kubeletPort), fmt.Errorf("port %d", n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	})

	c.checkKubectlStreams(t)
	c.checkKubeletStats()
	c.checkKubeletPortAuth(ctx)
	key := filepath.Join(c.stateDir, "cluster", "pki", "kubelet.key")
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the self-signed serving key %s: %v %v, want 0600", key, err, st)
	}
	if st, err := os.Stat(filepath.Dir(key)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, want 0700", filepath.Dir(key), err)
	}
}

// checkKubectlStreams: kubectl logs, exec (WebSocket and SPDY, with
// stdin, an exit code), attach and port-forward (WebSocket tunnelling and
// SPDY) through the API server, to the static pod static-web (its mirror
// pod) and the API's pod api-echo.
func (c *clusterNode) checkKubectlStreams(t *testing.T) {
	c.t.Helper()
	// logs of the mirror pod and of the API's pod
	c.waitKubectl(60*time.Second, "the static pod's ticks", func(s string) bool { return strings.Contains(s, "tick 0\n") }, "logs", "static-web")
	c.waitKubectl(60*time.Second, "the API pod's line", func(s string) bool { return s == "hello-from-api\n" }, "logs", "api-echo")
	if out := c.mustKubectl("logs", "static-web", "--tail=1"); strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "tick ") {
		c.t.Errorf("logs --tail=1: %q", out)
	}
	// exec, with and without stdin
	if out, errOut, code := c.kubectl("", "exec", "api-echo", "--", "cat", "/etc/hostname"); code != 0 || out != "api-echo\n" {
		c.t.Errorf("exec cat /etc/hostname: exit %d %q %q", code, out, errOut)
	}
	if out, errOut, code := c.kubectl("through-the-cluster\n", "exec", "-i", "static-web", "--", "cat"); code != 0 || out != "through-the-cluster\n" {
		c.t.Errorf("exec -i cat: exit %d %q %q", code, out, errOut)
	}
	if out, _, code := c.kubectl("", "exec", "static-web", "--", "sh", "-c", "echo out; exit 3"); code != 3 || out != "out\n" {
		c.t.Errorf("exec exit 3: exit %d %q", code, out)
	}
	// the same over SPDY (kubectl's fallback; the API server passes it on)
	spdy := exec.Command(kubectlBin(c.t), "exec", "-i", "api-echo", "--", "cat")
	spdy.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig, "HOME="+c.dir, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false")
	spdy.Stdin = strings.NewReader("over-spdy\n")
	if out, err := spdy.Output(); err != nil || string(out) != "over-spdy\n" {
		c.t.Errorf("exec -i over SPDY: %v %q", err, out)
	}
	// attach: the container's output from now on
	waitLine(t, c.kubectlLines(nil, "attach", "static-web"), "tick ")
	// port-forward to the static pod's httpd
	forwarding := regexp.MustCompile(`Forwarding from (127\.0\.0\.1:\d+) -> 8080`)
	for _, env := range [][]string{nil, {"KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}} { // WebSocket tunnelling, then SPDY
		local := waitMatch(t, c.kubectlLines(env, "port-forward", "pod/static-web", ":8080"), forwarding)
		if body, err := httpGet("http://" + local + "/"); err != nil || !strings.Contains(body, "hello-kube") {
			c.t.Errorf("port-forward %v: %v %q", env, err, body)
		}
	}
}

// checkKubeletStats: /pods, /stats/summary and /metrics/resource of the
// kubelet port with the admin's client certificate.
func (c *clusterNode) checkKubeletStats() {
	c.t.Helper()
	// /pods and the stats with the admin's client certificate (x509
	// against cluster.clientCAFile, then a SubjectAccessReview). Not
	// through the API server's nodes/proxy: it refuses to proxy to a
	// loopback address ("address not allowed"), and the Node's InternalIP
	// is 127.0.0.1 here.
	admin := c.kubeletClient(c.kube.AdminKubeconfig)
	if code, raw := c.kubeletGet(admin, "/pods", ""); code != http.StatusOK || !strings.Contains(raw, `"kind":"PodList"`) ||
		!strings.Contains(raw, `"name":"static-web"`) || !strings.Contains(raw, `"name":"api-echo"`) {
		c.t.Errorf("/pods as admin: %d %.300s", code, raw)
	}
	_, summary := c.kubeletGet(admin, "/stats/summary", "")
	if !regexp.MustCompile(`"name":"static-web".*"containers":\[\{"name":"main".*"usageCoreNanoSeconds":[1-9]`).MatchString(summary) ||
		!strings.Contains(summary, `"nodeName":"`+c.name+`"`) {
		c.t.Errorf("/stats/summary: %.600s", summary)
	}
	_, metrics := c.kubeletGet(admin, "/metrics/resource", "")
	for _, want := range []string{"\nnode_cpu_usage_seconds_total ", "\nnode_memory_working_set_bytes ",
		`container_cpu_usage_seconds_total{container="main",namespace="default",pod="static-web"} `,
		`container_memory_working_set_bytes{container="c",namespace="default",pod="api-echo"} `,
		`pod_memory_working_set_bytes{namespace="default",pod="api-echo"} `} {
		if !strings.Contains(metrics, want) {
			c.t.Errorf("/metrics/resource has no %q:\n%s", want, metrics)
		}
	}
}

// checkKubeletPortAuth: 401 without credentials or with an unknown
// token, 403 with the token of a ServiceAccount without nodes/proxy (with
// the kubelet's message) and with another node's client certificate, 200
// on /pods with a ServiceAccount allowed nodes/pods.
func (c *clusterNode) checkKubeletPortAuth(ctx context.Context) {
	c.t.Helper()
	core := c.admin.CoreV1()
	token := func(sa string) string {
		if _, err := core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			c.t.Fatal(err)
		}
		tr, err := core.ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		return tr.Status.Token
	}
	rbac := c.admin.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "node-pods-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/pods"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "node-pods-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "node-pods-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "pods-reader", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	anon := c.kubeletClient("")
	get := func(path, bearer string) (int, string) { return c.kubeletGet(anon, path, bearer) }
	if code, body := get("/pods", ""); code != http.StatusUnauthorized {
		c.t.Errorf("/pods without credentials: %d %q, want 401", code, body)
	}
	nobody, reader := token("nobody"), token("pods-reader")
	want := "Forbidden (user=system:serviceaccount:default:nobody, verb=get, resource=nodes, subresource(s)=[proxy])\n"
	if code, body := get("/containerLogs/default/static-web/main", nobody); code != http.StatusForbidden || body != want {
		c.t.Errorf("containerLogs as a ServiceAccount without nodes/proxy: %d %q, want 403 %q", code, body, want)
	}
	if code, body := get("/pods", reader); code != http.StatusOK || !strings.Contains(body, "static-web") {
		c.t.Errorf("/pods as a ServiceAccount allowed nodes/pods: %d %.200q", code, body)
	}
	if code, body := get("/containerLogs/default/static-web/main", reader); code != http.StatusForbidden {
		c.t.Errorf("containerLogs as a ServiceAccount allowed nodes/pods only: %d %.200q, want 403", code, body)
	}
	// a certificate of the client CA authenticates; another node's is not
	// allowed this node's proxy (the API server's Node authorizer)
	other := c.kubeletClient(c.kube.NodeKubeconfig(c.t, "other-node"))
	want = "Forbidden (user=system:node:other-node, verb=get, resource=nodes, subresource(s)=[proxy])\n"
	if code, body := c.kubeletGet(other, "/containerLogs/default/static-web/main", ""); code != http.StatusForbidden || body != want {
		c.t.Errorf("containerLogs with another node's certificate: %d %q, want 403 %q", code, body, want)
	}
	if code, body := get("/exec/default/static-web/0000/main?command=id", "garbage-token"); code != http.StatusUnauthorized {
		c.t.Errorf("a token the API server does not know: %d %q, want 401", code, body)
	}
}

// kubeletClient is a client of the kubelet API with the client
// certificate of kubeconfig ("": none). The kubelet's self-signed serving
// certificate is not checked: the API server does not check it either
// (no --kubelet-certificate-authority).
func (c *clusterNode) kubeletClient(kubeconfig string) *http.Client {
	c.t.Helper()
	cfg := &tls.Config{InsecureSkipVerify: true}
	if kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			c.t.Fatal(err)
		}
		if cfg, err = rest.TLSConfigFor(rc); err != nil {
			c.t.Fatal(err)
		}
		cfg.RootCAs, cfg.InsecureSkipVerify = nil, true
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// kubeletGet GETs path of the kubelet API with bearer ("": none).
func (c *clusterNode) kubeletGet(cl *http.Client, path, bearer string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d%s", c.kubeletPort, path), nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

// kubectlLines runs kubectl in the background with env added, killed
// when the test ends, and returns its stdout's lines.
func (d *podhostd) kubectlLines(env []string, args ...string) <-chan string {
	d.t.Helper()
	cmd := exec.Command(kubectlBin(d.t), args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}

// waitMatch is the first submatch of re in a line of lines.
func waitMatch(t *testing.T, lines <-chan string, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.After(60 * time.Second * waitScale)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended before a line matching %s", re)
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		case <-deadline:
			t.Fatalf("no line matching %s", re)
		}
	}
}
