//go:build integration

package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// webPod serves "hello-kube" on 8080 and logs a line a second.
func webPod(name, labels string) string {
	return podManifest(name, fmt.Sprintf(`  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "mkdir -p /www && echo hello-kube > /www/index.html && httpd -p 8080 -h /www && i=0; while true; do echo tick $i; i=$((i+1)); sleep 1; done"]
`, env.ImageRef)) + labels
}

// TestKubectlReads drives the real kubectl against a daemon's kube API over
// TLS: get in every output, watch, describe with events, logs (-f ends
// with the container), wait, events, top, nodes, api-resources, auth
// can-i; the pod IP kubectl shows answers from the host; a request without
// a client certificate gets 401.
func TestKubectlReads(t *testing.T) {
	d := newPodhostd(t)
	d.enableKubeAPI()
	d.start()
	d.useKubectl()
	d.writeManifest("web.yaml", strings.Replace(webPod("web", ""), "metadata:\n", "metadata:\n  labels: {app: web}\n", 1))
	d.mustKubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=120s")

	wide := d.mustKubectl("get", "pods", "-o", "wide")
	if !strings.Contains(wide, "web") || !strings.Contains(wide, "Running") || !strings.Contains(wide, "NOMINATED NODE") {
		t.Fatalf("get pods -o wide:\n%s", wide)
	}
	var pod corev1.Pod
	if err := json.Unmarshal([]byte(d.mustKubectl("get", "pod", "web", "-o", "json")), &pod); err != nil {
		t.Fatal(err)
	}
	ip := d.mustKubectl("get", "pod", "web", "-o", "jsonpath={.status.podIP}")
	if ip == "" || ip != pod.Status.PodIP || pod.ResourceVersion == "" {
		t.Fatalf("jsonpath IP %q, json IP %q, resourceVersion %q", ip, pod.Status.PodIP, pod.ResourceVersion)
	}
	if err := waitFor(20*time.Second, func() (bool, error) { // the host reaches the IP kubectl shows
		body, err := httpGet("http://" + net.JoinHostPort(ip, "8080") + "/")
		return strings.Contains(body, "hello-kube"), err
	}); err != nil {
		t.Fatalf("pod IP %s from kubectl does not answer: %v", ip, err)
	}
	if y := d.mustKubectl("get", "pod", "web", "-o", "yaml"); !strings.Contains(y, "kind: Pod") || !strings.Contains(y, "app: web") {
		t.Fatalf("get -o yaml:\n%s", y)
	}
	if out := d.mustKubectl("get", "pods", "-l", "app=web", "--show-labels"); !strings.Contains(out, "app=web") {
		t.Fatalf("get -l --show-labels:\n%s", out)
	}
	if out := d.mustKubectl("get", "pods", "--field-selector", "status.phase=Running", "-o", "name"); strings.TrimSpace(out) != "pod/web" {
		t.Fatalf("get --field-selector: %q", out)
	}

	// A watch sees an edit of the pod's labels (in place: same container).
	watch := exec.Command(kubectlBin(t), "get", "pods", "-w", "--output-watch-events", "--show-labels")
	watch.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir)
	wout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(wout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine(t, lines, "ADDED", "app=web")
	d.writeManifest("web.yaml", strings.Replace(webPod("web", ""), "metadata:\n", "metadata:\n  labels: {app: web, tier: edge}\n", 1))
	waitLine(t, lines, "MODIFIED", "tier=edge")

	desc := d.mustKubectl("describe", "pod", "web")
	for _, want := range []string{"Name:         web", "Status:       Running", "Events:", "Started", "Created container main"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe pod lacks %q:\n%s", want, desc)
		}
	}
	if out := d.mustKubectl("logs", "web", "--tail=1"); !strings.HasPrefix(out, "tick ") {
		t.Fatalf("logs --tail=1: %q", out)
	}
	if out := d.mustKubectl("get", "events", "--field-selector", "involvedObject.name=web"); !strings.Contains(out, "Started") {
		t.Fatalf("get events:\n%s", out)
	}
	d.waitKubectl(60*time.Second, "top pod row", func(s string) bool { return strings.Contains(s, "web") }, "top", "pod")
	host, _ := os.Hostname()
	if out := d.mustKubectl("get", "nodes"); !strings.Contains(out, strings.ToLower(host)) || !strings.Contains(out, "Ready") {
		t.Fatalf("get nodes:\n%s", out)
	}
	if out := d.mustKubectl("api-resources"); !strings.Contains(out, "pods") || !strings.Contains(out, "configmaps") {
		t.Fatalf("api-resources:\n%s", out)
	}
	if out := d.mustKubectl("auth", "can-i", "create", "pods"); strings.TrimSpace(out) != "yes" {
		t.Fatalf("auth can-i: %q", out)
	}

	// logs -f ends once the followed container stops.
	d.writeManifest("once.yaml", podManifest("once", fmt.Sprintf(`  restartPolicy: Never
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "echo first; sleep 3; echo last"]
`, env.ImageRef)))
	d.waitKubectl(60*time.Second, "once started", func(s string) bool { return strings.Contains(s, "first") }, "logs", "once")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second*waitScale)
	defer cancel()
	follow := exec.CommandContext(ctx, kubectlBin(t), "logs", "-f", "once")
	follow.Env = append(os.Environ(), "KUBECONFIG="+d.kubeconfig, "HOME="+d.dir)
	out, err := follow.Output()
	if err != nil || !strings.Contains(string(out), "last") {
		t.Fatalf("logs -f: %v %q", err, out)
	}

	// Without a client certificate: 401 and nothing else.
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
	resp, err := cl.Get("https://" + d.kubeAddr + "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "web") {
		t.Fatalf("no client certificate: %d %s", resp.StatusCode, body)
	}
}

// waitLine waits for a line holding every want.
func waitLine(t *testing.T, lines <-chan string, want ...string) {
	t.Helper()
	deadline := time.After(30 * time.Second * waitScale)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended before a line with %q", want)
			}
			all := true
			for _, w := range want {
				all = all && strings.Contains(l, w)
			}
			if all {
				return
			}
		case <-deadline:
			t.Fatalf("no line with %q", want)
		}
	}
}

// TestKubeAPIOnTheSocket: client-go reaches the same API over the daemon's
// unix socket (the path podhost's own CLI uses), without certificates.
func TestKubeAPIOnTheSocket(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	d.writeManifest("web.yaml", webPod("web", ""))
	d.waitRunning("web")
	cfg := &rest.Config{Host: "http://podhost", Timeout: 0, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.socket)
	}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("listing over the socket")
	pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != "web" {
		t.Fatalf("list over the socket: %v %+v", err, pods)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second*waitScale)
	defer cancel()
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{ResourceVersion: pods.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	d.removeManifest("web.yaml")
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && p.Name == "web" && (ev.Type == "DELETED" || p.DeletionTimestamp != nil) {
			return
		}
	}
	t.Fatal("watch over the socket ended without the deletion")
}
