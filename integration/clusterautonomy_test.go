//go:build integration

package integration

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// apiOutage is how long the API server is away in TestClusterAutonomy
// (issue 32's "killed for 60 s").
const apiOutage = 60 * time.Second

// containerIdentity is what a container restart would change: its task's
// host PID, that process's start time (/proc/PID/stat field 22) and the
// restart count.
type containerIdentity struct {
	pid      int
	start    string
	restarts int32
}

func identityOf(t *testing.T, p *corev1.Pod, name string) containerIdentity {
	t.Helper()
	pid := containerPID(t, p, name)
	f := statFields(pid)
	if len(f) < 22 {
		t.Fatalf("/proc/%d/stat: %v", pid, f)
	}
	var restarts int32
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == name {
			restarts = cs.RestartCount
		}
	}
	return containerIdentity{pid: pid, start: f[21], restarts: restarts}
}

// TestClusterAutonomy: with a static pod and two pods from the API server
// running, kube-apiserver is stopped for 60 s (etcd stays up) and
// podhost-cluster restarted meanwhile: no container restarts (same host
// PID and start time, same restart count), the pods from the API server
// keep running from their files; a container that exits while the API
// server is away has its status in the API within 10 s of its return,
// the mirror pod is the same object, Running, no pod is recreated (same
// UIDs). The Lease is not renewed while the API server is away (no
// kube-controller-manager here to turn the Node Unknown: the held Lease is
// what it would go by) and is renewed again after its return.
func TestClusterAutonomy(t *testing.T) {
	c := newClusterNode(t)
	c.start()
	ctx := context.Background()
	core := c.admin.CoreV1()
	c.defaultServiceAccount()
	c.writeManifest("static.yaml", podManifest("static", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, env.ImageRef)))
	no, grace := false, int64(1)
	apiPod := func(name, script string) *corev1.Pod {
		p, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: c.name, AutomountServiceAccountToken: &no, TerminationGracePeriodSeconds: &grace,
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: env.ImageRef, Command: []string{"sh", "-c", script}}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	apiStay := apiPod("api-stay", "sleep 3600")
	apiExit := apiPod("api-exit", "while [ ! -e /tmp/exit-now ]; do sleep 0.2; done; exit 3")
	before := map[string]containerIdentity{}
	for _, n := range []string{"static", "api-stay", "api-exit"} {
		before[n] = identityOf(t, c.waitRunning(n), "main")
	}
	staticUID := c.pod("static").UID
	mirror := c.waitMirrorRunning(c.pod("static"), "")
	c.poll(60*time.Second, "the API pods Running in the API", func(ctx context.Context) (bool, error) {
		for _, n := range []string{"api-stay", "api-exit"} {
			p, err := core.Pods("default").Get(ctx, n, metav1.GetOptions{})
			if err != nil || p.Status.Phase != corev1.PodRunning {
				return false, err
			}
		}
		return true, nil
	})
	leases := c.admin.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	lease, err := leases.Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	stopped := time.Now()
	c.kube.StopAPIServer()
	t.Logf("kube-apiserver stopped; lease renewed last at %v", lease.Spec.RenewTime.Time)
	// While it is away: a container exits, podhost-cluster restarts.
	if out, stderr, code := c.execCLI("", "api-exit", "--", "touch", "/tmp/exit-now"); code != 0 {
		t.Fatalf("exec: %q %q %d", out, stderr, code)
	}
	c.waitPod("api-exit", 60*time.Second, "api-exit Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	c.stopAgent(syscall.SIGTERM)
	c.startAgent()
	time.Sleep(time.Until(stopped.Add(apiOutage))) // the outage itself, not a wait for a condition
	for _, n := range []string{"static", "api-stay"} {
		if p := c.pod(n); p == nil || !allRunning(p) || identityOf(t, p, "main") != before[n] {
			t.Errorf("%s while the API server is away: %v, want it running as before %+v", n, p, before[n])
		}
	}

	c.kube.StartAPIServer(t)
	returned := time.Now()
	held, err := leases.Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if held.Spec.RenewTime.After(stopped) {
		t.Errorf("the Lease was renewed at %v, after the API server stopped at %v", held.Spec.RenewTime.Time, stopped)
	}
	// The status changed while away reaches the API within 10 s of its
	// return (podhost-cluster's status resync: 10 s; the poll scales it
	// for a loaded machine, the elapsed time is logged).
	c.poll(10*time.Second, "api-exit Failed (exit 3) in the API", func(ctx context.Context) (bool, error) {
		p, err := core.Pods("default").Get(ctx, "api-exit", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodFailed || len(p.Status.ContainerStatuses) != 1 {
			return false, err
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return term != nil && term.ExitCode == 3, nil
	})
	t.Logf("status caught up %v after the API server's return", time.Since(returned).Round(100*time.Millisecond))
	c.poll(40*time.Second, "Lease renewed after the return", func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, c.name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(returned), err
	})
	c.poll(30*time.Second, "the same mirror pod Running, the same API pods", func(ctx context.Context) (bool, error) {
		m, err := c.mirror(ctx, "static")
		if err != nil || m.UID != mirror.UID || m.Status.Phase != corev1.PodRunning {
			return false, fmt.Errorf("mirror %v: %v", mirror.UID, err)
		}
		for n, uid := range map[string]types.UID{"api-stay": apiStay.UID, "api-exit": apiExit.UID} {
			p, err := core.Pods("default").Get(ctx, n, metav1.GetOptions{})
			if err != nil || p.UID != uid {
				return false, fmt.Errorf("%s: %v", n, err)
			}
		}
		return true, nil
	})
	for _, n := range []string{"static", "api-stay"} {
		p := c.pod(n)
		if p == nil || p.UID != map[string]types.UID{"static": staticUID, "api-stay": apiStay.UID}[n] {
			t.Errorf("%s recreated", n)
			continue
		}
		if got := identityOf(t, p, "main"); got != before[n] {
			t.Errorf("%s after the outage: %+v, before %+v: restarted", n, got, before[n])
		}
	}
	for _, n := range []string{"api-stay", "api-exit"} {
		_ = core.Pods("default").Delete(ctx, n, metav1.DeleteOptions{})
	}
	c.removeManifest("static.yaml")
}
