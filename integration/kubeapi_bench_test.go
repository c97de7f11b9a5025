//go:build integration

package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// BenchmarkKubeAPI (make bench): with BENCH_KUBE_PODS (250) pods running,
// the wall time of `kubectl get pods` over the kube API against `podhost get
// pods` over /v1 (medians of 9, alternating, same run), and what 100
// concurrent watches of pods cost the daemon (RSS before and after, the
// watches open and idle). Written to BENCH_OUT.kubeapi.{json,txt}.
func BenchmarkKubeAPI(b *testing.B) {
	kubectlBin(b)
	n := 250
	if v, err := strconv.Atoi(os.Getenv("BENCH_KUBE_PODS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		d, _, _ := coldStartKube(b, n)
		rep := map[string]any{"pods": n}
		var ph, kc []time.Duration
		for range 9 {
			ph = append(ph, timed(b, env.PodhostBin, nil, "--config", d.configPath, "--socket", d.socket, "get", "pods"))
			kc = append(kc, timed(b, kubectlBin(b), []string{"KUBECONFIG=" + d.kubeconfig, "HOME=" + d.dir}, "get", "pods"))
		}
		rep["podhostGetMs"], rep["kubectlGetMs"] = median(ph).Milliseconds(), median(kc).Milliseconds()
		rep["ratio"] = median(kc).Seconds() / median(ph).Seconds()
		// Anonymous memory (heap, stacks, TLS buffers): what watches cost.
		// The file-backed part moves with the footprint reaper's trims of
		// the executable's pages (docs/decisions.md 16), not with watches.
		time.Sleep(5 * time.Second) // a quiet window after the gets, not a wait
		before, _ := rssSplitKiB(d.cmd.Process.Pid)
		goBefore := goMemory(d)
		stop := openWatches(b, d, 100)
		time.Sleep(5 * time.Second) // the measurement window, not a wait
		after, _ := rssSplitKiB(d.cmd.Process.Pid)
		goAfter := goMemory(d)
		stop()
		rep["anonRssBeforeWatchesKiB"], rep["anonRssWith100WatchesKiB"], rep["watchesCostKiB"] = before, after, after-before
		rep["goroutinesBefore"], rep["goroutinesWith100Watches"] = goBefore.goroutines, goAfter.goroutines
		rep["heapStackBeforeKiB"], rep["heapStackWith100WatchesKiB"] = goBefore.heapStackKiB, goAfter.heapStackKiB
		txt := fmt.Sprintf("kube API, %d pods: kubectl get pods %d ms, podhost get pods %d ms (medians of 9): ratio %.2f (target < 2)\n"+
			"100 concurrent watches: daemon anonymous RSS %.1f -> %.1f MiB: %+.1f MiB (target < 20); "+
			"Go heap+stacks in use %.1f -> %.1f MiB, goroutines %d -> %d\n",
			n, rep["kubectlGetMs"], rep["podhostGetMs"], rep["ratio"], float64(before)/1024, float64(after)/1024, float64(after-before)/1024,
			float64(goBefore.heapStackKiB)/1024, float64(goAfter.heapStackKiB)/1024, goBefore.goroutines, goAfter.goroutines)
		fmt.Print(txt)
		if out := os.Getenv("BENCH_OUT"); out != "" {
			j, _ := json.MarshalIndent(rep, "", "  ")
			_ = os.WriteFile(out+".kubeapi.json", append(j, '\n'), 0o644)
			_ = os.WriteFile(out+".kubeapi.txt", []byte(txt), 0o644)
		}
		d.teardown()
	}
}

// coldStartKube is coldStart with the kube API on a free port and a
// kubeconfig written.
func coldStartKube(b *testing.B, n int) (*podhostd, time.Duration, coldCPU) {
	d := newPodhostd(b)
	d.enableKubeAPI()
	appendConfig(b, d, "maxPods: 300\n")
	for j := range n {
		d.writeManifest(fmt.Sprintf("k%d.yaml", j), idlePod(fmt.Sprintf("k%d", j)))
	}
	start, cpu0 := time.Now(), sampleCPU(0)
	d.startNoWait()
	d.waitAllRunningWatched(n, 8*time.Minute)
	took, cpu := time.Since(start), sampleCPU(d.cmd.Process.Pid).since(cpu0)
	d.useKubectl()
	return d, took, cpu
}

// timed runs a command (env added) and returns its wall time.
func timed(b *testing.B, bin string, env []string, args ...string) time.Duration {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return time.Since(start)
}

// openWatches opens n watches of every pod over TLS with the admin
// certificate, each reading its stream; stop closes them.
func openWatches(b *testing.B, d *podhostd, n int) (stop func()) {
	kc, err := os.ReadFile(d.kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	var cfg struct {
		Clusters []struct {
			Cluster struct {
				CA []byte `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User struct {
				Cert []byte `json:"client-certificate-data"`
				Key  []byte `json:"client-key-data"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(kc, &cfg); err != nil {
		b.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cfg.Users[0].User.Cert, cfg.Users[0].User.Key)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.Clusters[0].Cluster.CA)
	ctx, cancel := context.WithCancel(context.Background())
	for range n {
		// One connection each, as n clients would.
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
		req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+d.kubeAddr+"/api/v1/pods?watch=1", nil)
		resp, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 16<<20)
			for sc.Scan() {
			}
		}()
	}
	return cancel
}

type goMem struct{ goroutines, heapStackKiB int }

// goMemory reads the daemon's goroutines and Go heap and stack in use from
// its /metrics (the Go collector).
func goMemory(d *podhostd) goMem {
	fams := d.scrapeMetrics("")
	g, _ := metricValue(fams, "go_goroutines", nil)
	h, _ := metricValue(fams, "go_memstats_heap_inuse_bytes", nil)
	st, _ := metricValue(fams, "go_memstats_stack_inuse_bytes", nil)
	return goMem{goroutines: int(g), heapStackKiB: int((h + st) / 1024)}
}
