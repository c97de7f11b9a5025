//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// clusterFootprint is BenchmarkClusterFootprint's report.
type clusterFootprint struct {
	Pods   int    `json:"pods"`
	Window string `json:"window"`
	// The daemon with its pods running, podhost-cluster not started
	// (standalone: what a box pays without a cluster), and with it
	// joined and every mirror pod Running.
	DaemonStandaloneAnonKiB int     `json:"daemonStandaloneRssAnonKiB"`
	DaemonStandaloneFileKiB int     `json:"daemonStandaloneRssFileKiB"`
	DaemonStandaloneCPUPct  float64 `json:"daemonStandaloneIdleCpuPct"`
	DaemonJoinedAnonKiB     int     `json:"daemonJoinedRssAnonKiB"`
	DaemonJoinedFileKiB     int     `json:"daemonJoinedRssFileKiB"`
	DaemonJoinedCPUPct      float64 `json:"daemonJoinedIdleCpuPct"`
	AgentAnonKiB            int     `json:"agentRssAnonKiB"`
	AgentFileKiB            int     `json:"agentRssFileKiB"`
	AgentCPUPct             float64 `json:"agentIdleCpuPct"`
	// From podhost-cluster's exec to every mirror pod Running in the API.
	JoinS float64 `json:"joinToMirrorsRunningS"`
}

// BenchmarkClusterFootprint (make bench): BENCH_CLUSTER_PODS (30) pods on a
// box joined to a private kube-apiserver + etcd. The daemon's RSS and idle
// CPU before podhost-cluster starts and once it has joined (every mirror
// pod Running, BENCH_SETTLE later), podhost-cluster's own RSS and idle CPU
// over the same BENCH_IDLE window, and the time from its exec to all
// mirror pods Running. Written to BENCH_OUT.cluster.{json,txt}.
func BenchmarkClusterFootprint(b *testing.B) {
	n := 30
	if v := envOr("BENCH_CLUSTER_PODS", ""); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			b.Fatalf("BENCH_CLUSTER_PODS: %q: want a pod count of at least 1", v)
		}
	}
	idle, err := time.ParseDuration(envOr("BENCH_IDLE", "60s"))
	if err != nil {
		b.Fatalf("BENCH_IDLE: %v", err)
	}
	settle, err := time.ParseDuration(envOr("BENCH_SETTLE", "30s"))
	if err != nil {
		b.Fatalf("BENCH_SETTLE: %v", err)
	}
	for range b.N {
		c := newClusterNode(b)
		asShipped(b, c.podhostd)
		for j := range n {
			c.writeManifest(fmt.Sprintf("c%d.yaml", j), idlePod(fmt.Sprintf("c%d", j)))
		}
		c.startNoWait()
		c.waitAllRunningWatched(n, 8*time.Minute)
		rep := clusterFootprint{Pods: n, Window: idle.String()}
		pid := c.cmd.Process.Pid
		time.Sleep(settle) // the start's burst given back: a window, not a wait
		rep.DaemonStandaloneCPUPct = idleCPU(pid, idle)
		rep.DaemonStandaloneAnonKiB, rep.DaemonStandaloneFileKiB = rssSplitKiB(pid)

		t0 := time.Now()
		c.startAgent()
		c.poll(5*time.Minute, fmt.Sprintf("%d mirror pods Running", n), func(ctx context.Context) (bool, error) {
			return c.mirrorsRunning(ctx) == n, nil
		})
		rep.JoinS = time.Since(t0).Seconds()
		time.Sleep(settle) // as above
		apid := c.agent.Process.Pid
		d0, a0, w0 := cpuTicks(pid), cpuTicks(apid), time.Now()
		time.Sleep(idle) // the measurement window itself, not a wait
		d1, a1, el := cpuTicks(pid), cpuTicks(apid), time.Since(w0).Seconds()
		rep.DaemonJoinedCPUPct, rep.AgentCPUPct = float64(d1-d0)/el, float64(a1-a0)/el // ticks are 1/100 s
		rep.DaemonJoinedAnonKiB, rep.DaemonJoinedFileKiB = rssSplitKiB(pid)
		rep.AgentAnonKiB, rep.AgentFileKiB = rssSplitKiB(apid)
		if got := c.mirrorsRunning(context.Background()); got != n {
			b.Errorf("after the idle window: %d of %d mirror pods Running", got, n)
		}
		writeClusterFootprint(b, rep)
	}
}

// mirrorsRunning counts the pods bound to the node that are Running in the
// API server.
func (c *clusterNode) mirrorsRunning(ctx context.Context) int {
	l, err := c.admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", c.name).String()})
	if err != nil {
		return -1
	}
	running := 0
	for _, p := range l.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running
}

func writeClusterFootprint(b *testing.B, rep clusterFootprint) {
	kib := func(anon, file int) string {
		return fmt.Sprintf("%.1f MiB (anon %.1f, file %.1f)", mib(anon+file), mib(anon), mib(file))
	}
	txt := fmt.Sprintf("joined box, %d pods (idle window %s): podhost-cluster exec -> all mirror pods Running %.1f s\n"+
		"  daemon standalone: RSS %s, idle CPU %.2f %%\n"+
		"  daemon joined:     RSS %s, idle CPU %.2f %%\n"+
		"  podhost-cluster:   RSS %s, idle CPU %.2f %%\n",
		rep.Pods, rep.Window, rep.JoinS,
		kib(rep.DaemonStandaloneAnonKiB, rep.DaemonStandaloneFileKiB), rep.DaemonStandaloneCPUPct,
		kib(rep.DaemonJoinedAnonKiB, rep.DaemonJoinedFileKiB), rep.DaemonJoinedCPUPct,
		kib(rep.AgentAnonKiB, rep.AgentFileKiB), rep.AgentCPUPct)
	fmt.Print(txt)
	if out := os.Getenv("BENCH_OUT"); out != "" {
		j, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(out+".cluster.json", append(j, '\n'), 0o644); err != nil {
			b.Error(err)
		}
		if err := os.WriteFile(out+".cluster.txt", []byte(txt), 0o644); err != nil {
			b.Error(err)
		}
	}
}
