//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/testenv"
)

// scrapeMetrics GETs /metrics from the daemon's unix socket (or url, when
// given) and parses it with Prometheus' text parser.
func (d *podhostd) scrapeMetrics(url string) map[string]*dto.MetricFamily {
	d.t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	if url == "" {
		url = "http://podhost/metrics"
		c.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", d.socket)
		}}
	}
	resp, err := c.Get(url)
	if err != nil {
		d.t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		d.t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// metricValue is the value of the series of name whose labels include
// want (gauge, counter, or a histogram's sample count); ok false if none.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range fams[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// podMemoryFile is the host's memory usage file of a BestEffort pod's
// cgroup (cgroupfs driver): v2 memory.current or v1 memory.usage_in_bytes.
func (d *podhostd) podMemoryFile(p *corev1.Pod) string {
	rel := filepath.Join(d.cgroupRoot, "besteffort", "pod"+string(p.UID))
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return filepath.Join("/sys/fs/cgroup", rel, "memory.current")
	}
	return filepath.Join("/sys/fs/cgroup/memory", rel, "memory.usage_in_bytes")
}

func readUintFile(t *testing.T, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return float64(v)
}

func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestObserveRunningPod: /metrics on the socket and on --metrics-address
// parse, carry the pod's memory as the host's cgroup file has it and the
// operation metrics of its start; top, -o jsonpath and logs --since /
// --since-time work on it.
func TestObserveRunningPod(t *testing.T) {
	d := newPodhostd(t)
	addr := freeLoopbackAddr(t)
	d.startArgs(append(d.args(), "--metrics-address", addr))
	d.waitReady(60 * time.Second)
	d.writeManifest("obs.yaml", podManifest("obs", `  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sh", "-c", "echo first; sleep 4; echo second; exec sleep 3600"]
`))
	p := d.waitRunning("obs")

	memFile := d.podMemoryFile(p)
	before := readUintFile(t, memFile)
	fams := d.scrapeMetrics("")
	after := readUintFile(t, memFile)
	pod := map[string]string{"namespace": "default", "pod": "obs", "container": ""}
	got, ok := metricValue(fams, "container_memory_usage_bytes", pod)
	if !ok || got < min(before, after)-256<<10 || got > max(before, after)+256<<10 {
		t.Fatalf("container_memory_usage_bytes%v = %v (found %v), host file %s read %v then %v", pod, got, ok, memFile, before, after)
	}
	for _, want := range []struct {
		name   string
		labels map[string]string
	}{
		{"container_memory_working_set_bytes", map[string]string{"pod": "obs", "container": "main"}},
		{"container_cpu_usage_seconds_total", map[string]string{"pod": "obs", "container": "main"}},
		{"container_threads", map[string]string{"pod": "obs", "container": "main"}},
		{"podhost_pods", map[string]string{"phase": "Running"}},
		{"podhost_pod_start_duration_seconds", nil},
		{"podhost_pod_sync_duration_seconds", map[string]string{"kind": "SyncPod", "result": "success"}},
		{"podhost_cni_operation_duration_seconds", map[string]string{"operation": "ADD", "result": "success"}},
	} {
		if v, ok := metricValue(fams, want.name, want.labels); !ok || v <= 0 {
			t.Errorf("%s%v = %v (found %v), want > 0", want.name, want.labels, v, ok)
		}
	}
	if tcp := d.scrapeMetrics("http://" + addr + "/metrics"); tcp["container_memory_usage_bytes"] == nil {
		t.Errorf("--metrics-address %s: no container metrics", addr)
	}

	top := d.mustCLI("top", "pod", "obs", "--containers")
	if !regexpLine(top, `POD\s+NAME\s+CPU\(cores\)\s+MEMORY\(bytes\)`) || !regexpLine(top, `obs\s+main\s+\d+m\s+\d+Mi`) {
		t.Fatalf("top pod obs --containers:\n%s", top)
	}
	if ip := d.mustCLI("get", "pod", "obs", "-o", "jsonpath={.status.podIP}"); ip != p.Status.PodIP || ip == "" {
		t.Fatalf("jsonpath podIP = %q, want %q", ip, p.Status.PodIP)
	}

	var secondAt time.Time
	if err := waitFor(30*time.Second, func() (bool, error) {
		out, err := d.cli("logs", "obs", "--timestamps")
		for _, l := range strings.Split(out, "\n") {
			if ts, msg, ok := strings.Cut(l, " "); ok && msg == "second" {
				secondAt, err = time.Parse(time.RFC3339Nano, ts)
				return err == nil, err
			}
		}
		return false, err
	}); err != nil {
		t.Fatalf("no second line: %v", err)
	}
	since := time.Since(secondAt) + 1500*time.Millisecond // first is 4 s before second
	if out := d.mustCLI("logs", "obs", "--since", since.String()); out != "second\n" {
		t.Errorf("logs --since %v = %q, want only the second line", since, out)
	}
	if out := d.mustCLI("logs", "obs", "--since-time", secondAt.Truncate(time.Second).Format(time.RFC3339)); out != "second\n" {
		t.Errorf("logs --since-time = %q, want only the second line", out)
	}
	if out := d.mustCLI("logs", "obs"); out != "first\nsecond\n" {
		t.Errorf("logs = %q", out)
	}
}

// TestObserveWatchAndEvents: `get pods -w` prints the table, then a line
// for each change of a run-to-completion pod's row: not yet running,
// Running, Completed. `events --for pod/NAME` lists its events.
func TestObserveWatchAndEvents(t *testing.T) {
	d := newPodhostd(t)
	d.start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, env.PodhostBin, "--config", d.configPath, "--socket", d.socket, "get", "pods", "-w")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	if first := <-lines; !strings.HasPrefix(first, "NAME") {
		t.Fatalf("watch header = %q", first)
	}
	d.writeManifest("job.yaml", podManifest("job", `  restartPolicy: Never
  containers:
  - name: main
    image: `+env.ImageRef+`
    command: ["sh", "-c", "sleep 2; echo done"]
`))
	var got []string
	deadline := time.After(60 * time.Second)
	status := regexp.MustCompile(`^job\s+\d+/\d+\s+(\S+)\s+`)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("watch ended; got %q", got)
			}
			m := status.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("unexpected watch line %q", l)
			}
			got = append(got, m[1])
			done = m[1] == "Completed"
		case <-deadline:
			t.Fatalf("no Completed line after 60s; got %q\n%s", got, d.logs())
		}
	}
	t.Logf("watch statuses: %q", got)
	want := regexp.MustCompile(`^(Pending|ContainerCreating)( (Pending|ContainerCreating))* Running Completed$`)
	if !want.MatchString(strings.Join(got, " ")) {
		t.Fatalf("watch statuses = %q, want Pending/ContainerCreating → Running → Completed, one line per change", got)
	}

	out := d.mustCLI("events", "--for", "pod/job")
	if !regexpLine(out, `LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE`) {
		t.Fatalf("events header:\n%s", out)
	}
	for _, reason := range []string{"Pulled", "Created", "Started"} {
		if !regexpLine(out, `(?m)^\S+\s+Normal\s+`+reason+`\s+pod/job\s+`) {
			t.Errorf("events --for pod/job lacks %s:\n%s", reason, out)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("Container image %q already present on machine", env.ImageRef)) {
		t.Errorf("no 'already present' Pulled message:\n%s", out)
	}
}

// TestObservePullEventsAndMetrics: an image fetched from a registry gives
// the kubelet's Pulling and Pulled ("Successfully pulled image … in …")
// events and counts in podhost_image_pulls_total.
func TestObservePullEventsAndMetrics(t *testing.T) {
	_, ref := registryImage(t, testenv.RegistryOptions{})
	d := newPodhostd(t)
	d.start()
	d.writeManifest("pulled.yaml", registryPod("pulled", ref))
	d.waitRunning("pulled")
	out := d.mustCLI("events", "--for", "pod/pulled")
	if !regexpLine(out, `Normal\s+Pulling\s+pod/pulled\s+Pulling image "`+regexp.QuoteMeta(ref)+`"`) ||
		!regexpLine(out, `Normal\s+Pulled\s+pod/pulled\s+Successfully pulled image "`+regexp.QuoteMeta(ref)+`" in \S+ \(\S+ including waiting\)\. Image size: \d+ bytes\.`) {
		t.Fatalf("events --for pod/pulled:\n%s", out)
	}
	fams := d.scrapeMetrics("")
	if v, ok := metricValue(fams, "podhost_image_pulls_total", map[string]string{"result": "success"}); !ok || v < 1 {
		t.Errorf("podhost_image_pulls_total{result=success} = %v (found %v)", v, ok)
	}
	if v, ok := metricValue(fams, "podhost_image_pull_duration_seconds", map[string]string{"result": "success"}); !ok || v < 1 {
		t.Errorf("podhost_image_pull_duration_seconds count = %v (found %v)", v, ok)
	}
}
