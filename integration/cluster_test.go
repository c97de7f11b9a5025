//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podhost/podhost/internal/model/wellknown"
	"github.com/podhost/podhost/internal/testenv"
)

// clusterNode is a podhost joined to a private kube-apiserver + etcd:
// the daemon and podhost-cluster beside it.
type clusterNode struct {
	*podhostd
	kube  *testenv.KubeAPIServer
	admin kubernetes.Interface
	name  string // the Node's name
	// kubeletPort: podhost-cluster's kubelet API, on 127.0.0.1 (the
	// Node's InternalIP here: cluster.nodeIP), where the API server
	// reaches it.
	kubeletPort int

	agentBin    string
	agent       *exec.Cmd     // podhost-cluster (nil: not running)
	agentExited chan struct{} // closed when agent exits
	agentOut    *syncWriter
}

// newUnjoinedClusterNode starts a control plane and a podhost (not
// started) that is not configured to join it yet.
func newUnjoinedClusterNode(t testing.TB) *clusterNode {
	t.Helper()
	k := testenv.StartKubeAPIServer(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", k.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &clusterNode{kube: k, admin: admin, name: fmt.Sprintf("podhost-it-%d", os.Getpid()),
		agentBin: env.PodhostClusterBin(t), agentOut: &syncWriter{w: &bytes.Buffer{}}}
	c.podhostd = newPodhostd(t) // after the control plane: its teardown runs first
	t.Cleanup(func() {          // before the daemon's teardown
		c.stopAgent(syscall.SIGTERM)
		if t.Failed() {
			t.Logf("podhost-cluster log:\n%s", c.agentLogs())
		}
		// the pods from the API server: gone with their files
		files, _ := filepath.Glob(filepath.Join(c.stateDir, "cluster", "manifests", "*.yaml"))
		for _, f := range files {
			_ = os.Remove(f)
		}
	})
	return c
}

// newClusterNode starts a control plane and a podhost configured to join
// it as node name, with a kubelet's credentials (system:node:<name>);
// extra are more keys of the config's cluster section ("clusterDNS:
// [10.96.0.10]").
func newClusterNode(t testing.TB, extra ...string) *clusterNode {
	t.Helper()
	c := newUnjoinedClusterNode(t)
	f, err := os.OpenFile(c.configPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c.kubeletPort = testenv.FreePort(t)
	keys := append([]string{"kubeconfig: " + c.kube.NodeKubeconfig(t, c.name), "nodeName: " + c.name, "nodeIP: 127.0.0.1",
		fmt.Sprintf("kubeletPort: %d", c.kubeletPort), "clientCAFile: " + c.kube.CAFile}, extra...)
	if _, err := fmt.Fprintf(f, "cluster: {%s}\n", strings.Join(keys, ", ")); err != nil {
		t.Fatal(err)
	}
	return c
}

// start runs the daemon, then podhost-cluster beside it if it is not
// running.
func (c *clusterNode) start() {
	c.t.Helper()
	c.podhostd.start()
	if c.agent == nil {
		c.startAgent()
	}
}

// startAgent runs podhost-cluster with the daemon's config and socket.
func (c *clusterNode) startAgent() {
	c.t.Helper()
	cmd := exec.Command(c.agentBin, "--config", c.configPath, "--socket", c.socket, "--state-dir", c.stateDir)
	cmd.Env = append(os.Environ(), "PODHOST_LOG_LEVEL=debug")
	cmd.Stdout, cmd.Stderr = c.agentOut, c.agentOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.agent, c.agentExited = cmd, make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(cmd, c.agentExited)
}

// stopAgent sends sig to podhost-cluster and waits for it to exit.
func (c *clusterNode) stopAgent(sig syscall.Signal) {
	if c.agent == nil {
		return
	}
	if !signalAndWait(c.agent.Process, c.agentExited, sig) {
		c.t.Errorf("podhost-cluster did not exit on %v", sig)
	}
	c.agent = nil
}

func (c *clusterNode) agentLogs() string { return c.agentOut.String() }

// agentRSS is podhost-cluster's VmRSS, RssAnon and RssFile lines.
func (c *clusterNode) agentRSS() string {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.agent.Process.Pid))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(st), "\n") {
		if k, _, _ := strings.Cut(l, ":"); k == "VmRSS" || k == "RssAnon" || k == "RssFile" {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, ", ")
}

// poll waits (× waitScale) for cond, asking the API server every 250 ms.
func (c *clusterNode) poll(timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	c.t.Helper()
	ctx := context.Background()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout*waitScale, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		c.t.Fatalf("%s: not within %v (last error: %v)\npodhost log:\n%s\npodhost-cluster log:\n%s\nkube-apiserver log:\n%s",
			what, timeout*waitScale, last, c.logs(), c.agentLogs(), c.kube.LogTail(20))
	}
}

func (c *clusterNode) mirror(ctx context.Context, name string) (*corev1.Pod, error) {
	return c.admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
}

// waitMirrorRunning waits for a mirror pod of local pod p (not of UID
// other) that is Running with p's IP.
func (c *clusterNode) waitMirrorRunning(p *corev1.Pod, other types.UID) *corev1.Pod {
	c.t.Helper()
	var m *corev1.Pod
	c.poll(60*time.Second, "mirror pod "+p.Name+" Running with the pod's IP", func(ctx context.Context) (bool, error) {
		var err error
		m, err = c.mirror(ctx, p.Name)
		if err != nil {
			return false, err
		}
		return m.UID != other && m.DeletionTimestamp == nil && m.Status.Phase == corev1.PodRunning && m.Status.PodIP == p.Status.PodIP, nil
	})
	return m
}

// waitMirrorsAfterRestart waits until the only pod bound to the node is
// the mirror pod of UID mirror, Running, and checks that the Node is still
// nodeUID and Ready.
func (c *clusterNode) waitMirrorsAfterRestart(mirror, nodeUID types.UID, after string) {
	c.t.Helper()
	c.poll(60*time.Second, "mirror pods reconciled after "+after, func(ctx context.Context) (bool, error) {
		l, err := c.admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", c.name).String()})
		if err != nil {
			return false, err
		}
		if len(l.Items) != 1 || l.Items[0].UID != mirror {
			return false, fmt.Errorf("pods on the node: %d, want the mirror pod %s only", len(l.Items), mirror)
		}
		return l.Items[0].Status.Phase == corev1.PodRunning, nil
	})
	n, err := c.admin.CoreV1().Nodes().Get(context.Background(), c.name, metav1.GetOptions{})
	if err != nil || n.UID != nodeUID || !nodeReady(n) {
		c.t.Errorf("Node after %s: err %v, uid %s (was %s)", after, err, n.UID, nodeUID)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestClusterJoin: podhost registers its Node (Ready, its capacity),
// renews its Lease, publishes a mirror pod per pod with the pod's status,
// recreates one deleted in the cluster without touching the pod, survives
// kill -9 without duplicating anything, and removes the mirror pod with
// the pod.
func TestClusterJoin(t *testing.T) {
	c := newClusterNode(t)
	c.start()
	ctx := context.Background()
	local, err := c.client.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var node *corev1.Node
	c.poll(60*time.Second, "Node "+c.name+" Ready", func(ctx context.Context) (bool, error) {
		node, err = c.admin.CoreV1().Nodes().Get(ctx, c.name, metav1.GetOptions{})
		return err == nil && nodeReady(node), err
	})
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		if got, want := node.Status.Capacity[r], local.Status.Capacity[r]; got.Cmp(want) != 0 {
			t.Errorf("Node capacity %s = %s, podhost's %s", r, got.String(), want.String())
		}
		if got, want := node.Status.Allocatable[r], local.Status.Allocatable[r]; got.Cmp(want) != 0 {
			t.Errorf("Node allocatable %s = %s, podhost's %s", r, got.String(), want.String())
		}
	}
	if node.Status.NodeInfo.BootID == "" || node.Labels[corev1.LabelHostname] != c.name {
		t.Errorf("Node: bootID %q, hostname label %q", node.Status.NodeInfo.BootID, node.Labels[corev1.LabelHostname])
	}

	// The Lease: held by the node, owned by it, renewed.
	leases := c.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	var first metav1.MicroTime
	c.poll(60*time.Second, "Lease of "+c.name, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, c.name, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return false, err
		}
		if *l.Spec.HolderIdentity != c.name || *l.Spec.LeaseDurationSeconds != 40 {
			t.Fatalf("Lease: holder %q, duration %d", *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds)
		}
		first = *l.Spec.RenewTime
		return len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == node.UID, nil
	})
	c.poll(40*time.Second, "Lease renewed", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, c.name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(first.Time), err
	})

	// A pod gets its mirror pod, with the pod's status.
	c.writeManifest("web.yaml", podManifest("web", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: %s
    command: ["sleep", "3600"]
`, env.ImageRef)))
	p := c.waitRunning("web")
	m := c.waitMirrorRunning(p, "")
	if got, want := m.Annotations[corev1.MirrorPodAnnotationKey], p.Annotations[wellknown.AnnotationConfigHash]; got != want || want == "" {
		t.Errorf("mirror annotation %q, want the pod's config hash %q", got, want)
	}
	if m.Spec.NodeName != c.name || len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "Node" || m.OwnerReferences[0].UID != node.UID {
		t.Errorf("mirror pod: nodeName %q, owners %+v", m.Spec.NodeName, m.OwnerReferences)
	}
	containerID := p.Status.ContainerStatuses[0].ContainerID
	t.Logf("podhost-cluster with one pod: %s", c.agentRSS()) // a figure for docs/decisions.md 29

	// Deleted in the cluster (kubectl's default: graceful): recreated,
	// the pod's container untouched.
	if err := c.admin.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	m2 := c.waitMirrorRunning(p, m.UID)
	if p2 := c.pod("web"); p2 == nil || p2.Status.ContainerStatuses[0].ContainerID != containerID {
		t.Errorf("deleting the mirror pod touched the pod: %s", statusSummary(p2))
	}

	// kill -9 of the daemon (podhost-cluster keeps running and finds it
	// again), then of podhost-cluster: the same Node, the same mirror
	// pod, no other, the pod's container untouched.
	c.kill(syscall.SIGKILL)
	c.start()
	c.waitMirrorsAfterRestart(m2.UID, node.UID, "the daemon's restart")
	c.stopAgent(syscall.SIGKILL)
	c.startAgent()
	c.waitMirrorsAfterRestart(m2.UID, node.UID, "podhost-cluster's restart")
	if p2 := c.pod("web"); p2 == nil || p2.Status.ContainerStatuses[0].ContainerID != containerID {
		t.Errorf("the restarts touched the pod: %s", statusSummary(p2))
	}

	// The pod removed: its mirror pod goes.
	c.removeManifest("web.yaml")
	c.poll(60*time.Second, "mirror pod deleted with the pod", func(ctx context.Context) (bool, error) {
		_, err := c.mirror(ctx, "web")
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// TestClusterMirrorFollowsRestartsAndRefusals: a container's restarts
// reach its mirror pod's status; a pod referencing a Secret, which the API
// server refuses as a mirror pod, runs all the same, its refusal logged.
func TestClusterMirrorFollowsRestartsAndRefusals(t *testing.T) {
	c := newClusterNode(t)
	c.start()
	c.writeManifest("crash.yaml", podManifest("crash", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: crash
    image: %s
    command: ["sh", "-c", "sleep 1; exit 3"]
`, env.ImageRef)))
	c.writeManifestMode("secret.yaml", fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: hunter2
---
%s`, podManifest("withsecret", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sleep", "3600"]
    env:
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: creds, key: password}}
`, env.ImageRef))), 0o600)

	c.poll(90*time.Second, "the mirror pod counts the container's restarts", func(ctx context.Context) (bool, error) {
		m, err := c.mirror(ctx, "crash")
		if err != nil {
			return false, err
		}
		local := c.pod("crash")
		if local == nil || len(m.Status.ContainerStatuses) != 1 || len(local.Status.ContainerStatuses) != 1 {
			return false, nil
		}
		got, want := m.Status.ContainerStatuses[0].RestartCount, local.Status.ContainerStatuses[0].RestartCount
		return got >= 1 && got == want, fmt.Errorf("mirror restartCount %d, podhost's %d", got, want)
	})

	c.waitRunning("withsecret")
	c.poll(60*time.Second, "the mirror pod's refusal logged", func(ctx context.Context) (bool, error) {
		return strings.Contains(c.agentLogs(), "may not reference secrets"), nil
	})
	if _, err := c.mirror(context.Background(), "withsecret"); !apierrors.IsNotFound(err) {
		t.Errorf("mirror pod of a pod with a Secret: err %v, want NotFound", err)
	}
	// A second restart comes after a 10 s back-off: more than a mirror
	// resync period later, the refusal is still one line.
	c.poll(90*time.Second, "a second restart in the mirror pod", func(ctx context.Context) (bool, error) {
		m, err := c.mirror(ctx, "crash")
		return err == nil && len(m.Status.ContainerStatuses) == 1 && m.Status.ContainerStatuses[0].RestartCount >= 2, err
	})
	if n := strings.Count(c.agentLogs(), "may not reference secrets"); n != 1 {
		t.Errorf("the refusal logged %d times, want once", n)
	}
}

// TestClusterLeaseFollowsTheDaemon: the Lease stands for the daemon, not
// for podhost-cluster. With the daemon stopped, podhost-cluster (still
// running) stops renewing it and it expires, as a dead kubelet's; with
// the daemon back it is renewed again and the Node is Ready.
func TestClusterLeaseFollowsTheDaemon(t *testing.T) {
	c := newClusterNode(t)
	c.start()
	leases := c.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	c.poll(60*time.Second, "Lease of "+c.name, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, c.name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil, err
	})

	c.kill(syscall.SIGTERM)
	c.poll(60*time.Second, "podhost-cluster stops renewing the Lease", func(context.Context) (bool, error) {
		return strings.Contains(c.agentLogs(), "the Lease is no longer renewed"), nil
	})
	l, err := leases.Get(context.Background(), c.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := l.Spec.RenewTime.Time
	c.poll(90*time.Second, "the Lease expires while the daemon is down", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !l.Spec.RenewTime.Time.Equal(last) {
			t.Fatalf("the Lease was renewed at %v while the daemon was down\n%s", l.Spec.RenewTime, c.agentLogs())
		}
		return time.Since(last) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second, nil
	})

	c.start() // the daemon only: podhost-cluster kept running
	c.poll(60*time.Second, "the Lease renewed with the daemon back", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, c.name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(last), err
	})
	c.poll(60*time.Second, "Node "+c.name+" Ready", func(ctx context.Context) (bool, error) {
		n, err := c.admin.CoreV1().Nodes().Get(ctx, c.name, metav1.GetOptions{})
		return err == nil && nodeReady(n), err
	})
}

// TestClusterAPIPod: a pod the cluster binds to the node (spec.nodeName)
// runs on the box with a ConfigMap volume and a Secret env from the API
// server, its status reaches the API (no mirror pod is made for it), and
// a delete with --grace-period=3 stops it within that grace, not its
// terminationGracePeriodSeconds, then removes it from the API.
func TestClusterAPIPod(t *testing.T) {
	c := newClusterNode(t)
	c.start()
	ctx := context.Background()
	core := c.admin.CoreV1()
	c.defaultServiceAccount()
	if _, err := core.ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
		Data: map[string]string{"greeting": "hello from the cluster"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-secret"},
		StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	no, grace := false, int64(60)
	created, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-web"},
		Spec: corev1.PodSpec{NodeName: c.name, AutomountServiceAccountToken: &no, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "web", Image: env.ImageRef, Command: []string{"sleep", "3600"},
				Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app-secret"}, Key: "password"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	local := c.waitRunning("api-web")
	if local.UID != created.UID {
		t.Errorf("the pod runs with UID %s, the API's is %s", local.UID, created.UID)
	}
	out, stderr, code := c.execCLI("", "api-web", "--", "sh", "-c", "cat /config/greeting; echo; echo $PASSWORD")
	if code != 0 || out != "hello from the cluster\nhunter2\n" {
		t.Errorf("in the pod: %q (stderr %q, exit %d), want the ConfigMap's greeting and the Secret's password", out, stderr, code)
	}
	c.poll(60*time.Second, "the pod's status in the API: Running with its IP", func(ctx context.Context) (bool, error) {
		p, err := core.Pods("default").Get(ctx, "api-web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.UID != created.UID || p.Annotations[corev1.MirrorPodAnnotationKey] != "" {
			t.Fatalf("the API's pod was replaced: uid %s, annotations %v", p.UID, p.Annotations)
		}
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP == local.Status.PodIP, nil
	})

	// A pod podSecurity.cluster (baseline) refuses: Failed in the API
	// with the daemon's reason, and gone from it when deleted.
	if _, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "api-priv"},
		Spec: corev1.PodSpec{NodeName: c.name, AutomountServiceAccountToken: &no, HostIPC: true, Containers: []corev1.Container{{Name: "c",
			Image: env.ImageRef, Command: []string{"sleep", "3600"}}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.poll(60*time.Second, "the refused pod Failed in the API", func(ctx context.Context) (bool, error) {
		p, err := core.Pods("default").Get(ctx, "api-priv", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "PodhostRefused" && strings.Contains(p.Status.Message, "hostIPC"),
			fmt.Errorf("status %s %s %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
	if c.pod("api-priv") != nil {
		t.Error("the refused pod runs on the box")
	}
	if err := core.Pods("default").Delete(ctx, "api-priv", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	three := int64(3)
	if err := core.Pods("default").Delete(ctx, "api-web", metav1.DeleteOptions{GracePeriodSeconds: &three}); err != nil {
		t.Fatal(err)
	}
	c.poll(60*time.Second, "the pod stopped and gone from the API", func(ctx context.Context) (bool, error) {
		_, err := core.Pods("default").Get(ctx, "api-web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return c.pod("api-web") == nil, nil
		}
		return false, err
	})
	if _, err := core.Pods("default").Get(ctx, "api-priv", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused pod, deleted, is still in the API: %v", err)
	}
	// sleep ignores SIGTERM as PID 1: it is killed when the grace ends.
	if took := time.Since(start); took > 40*time.Second {
		t.Errorf("the delete took %v: the deletion's grace (3 s) was not honoured, the pod's (60 s) was", took)
	}
}
