//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	restclient "k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"k8s.io/client-go/tools/remotecommand"
	clientexec "k8s.io/client-go/util/exec"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/services/kubeapi/stream/streamtest"
)

// kstream is the pod the streaming tests use: app writes numbered lines to
// stdout and stderr, web serves HTTP on 8080, wc answers on 9000 with the
// count of bytes it read once the client half-closes.
func kstreamManifest() string {
	return podManifest("kstream", fmt.Sprintf(`  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo tick $i; echo warn $i >&2; sleep 0.1; done"]
  - name: web
    image: %[1]s
    command: ["httpd", "-f", "-p", "8080", "-h", "/var/www"]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
  - name: wc
    image: %[1]s
    command: ["nc", "-ll", "-p", "9000", "-e", "wc", "-c"]
    readinessProbe: {tcpSocket: {port: 9000}, periodSeconds: 1}
`, env.ImageRef))
}

// TestKubeStreaming drives the daemon's kube API streaming endpoints with
// kubectl's clients (client-go: WebSocket v5 / the WebSocket tunnel, and
// the SPDY fallback, which TestKubectlStreams's kubectl never takes) on a
// real pod, checking the host: a TTY's size after resizes as the kernel
// has it, the exec's process gone from /proc after its client went away,
// the pod's own servers answering through its network namespace,
// half-close included.
func TestKubeStreaming(t *testing.T) {
	d := newPodhostd(t)
	d.enableKubeAPI()
	d.start()
	d.writeManifest("kstream.yaml", kstreamManifest())
	d.waitPod("kstream", 90*time.Second, "ready", func(p *corev1.Pod) bool {
		return allRunning(p) && condStatus(p, corev1.PodReady) == corev1.ConditionTrue
	})
	cfg := kubeRESTConfig(t, d)
	podURL := cfg.Host + "/api/v1/namespaces/default/pods/kstream/"
	t.Run("exec", func(t *testing.T) { testKubeExec(t, cfg, podURL) })
	t.Run("tty", func(t *testing.T) { testKubeExecTTY(t, cfg, podURL) })
	t.Run("hangup", func(t *testing.T) { testKubeExecHangup(t, cfg, podURL) })
	t.Run("attach", func(t *testing.T) { testKubeAttach(t, d, cfg, podURL) })
	t.Run("portforward", func(t *testing.T) { testKubePortForward(t, cfg, podURL) })
}

// kubeRESTConfig is the client config of the kubeconfig `podhost
// kubeconfig` writes for d (its kube API over TLS, the admin certificate).
func kubeRESTConfig(t *testing.T, d *podhostd) *restclient.Config {
	t.Helper()
	out, err := exec.Command(env.PodhostBin, "--config", d.configPath, "kubeconfig", "--state-dir", d.stateDir).Output()
	if err != nil {
		t.Fatalf("podhost kubeconfig: %v", err)
	}
	var kc clientcmdv1.Config
	if err := yaml.Unmarshal(out, &kc); err != nil || len(kc.Clusters) != 1 || len(kc.AuthInfos) != 1 {
		t.Fatalf("podhost kubeconfig: %v\n%s", err, out)
	}
	cl, user := kc.Clusters[0].Cluster, kc.AuthInfos[0].AuthInfo
	return &restclient.Config{Host: cl.Server, TLSClientConfig: restclient.TLSClientConfig{
		CAData: cl.CertificateAuthorityData, CertData: user.ClientCertificateData, KeyData: user.ClientKeyData}}
}

// testKubeExec: stdin to the command, stdout and stderr apart, the exit
// code (kubectl: "command terminated with exit code 3").
func testKubeExec(t *testing.T, cfg *restclient.Config, podURL string) {
	for _, ex := range streamtest.Executors {
		e, err := ex.New(cfg, streamtest.URL(t, podURL, "exec", "app", true, false, "sh", "-c", "cat; echo oops >&2; exit 3"))
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		err = e.StreamWithContext(testCtx(t, time.Minute), remotecommand.StreamOptions{Stdin: strings.NewReader("hello\n"), Stdout: &out, Stderr: &errb})
		var ce clientexec.CodeExitError
		if !errors.As(err, &ce) || ce.ExitStatus() != 3 {
			t.Errorf("%s: %v (%T), want exit code 3", ex.Name, err, err)
		}
		if out.String() != "hello\n" || errb.String() != "oops\n" {
			t.Errorf("%s: stdout %q stderr %q", ex.Name, out.String(), errb.String())
		}
	}
}

// testKubeExecTTY: with -t the process has a terminal the client's sizes
// resize (stty reads the kernel's) and TERM=xterm.
func testKubeExecTTY(t *testing.T, cfg *restclient.Config, podURL string) {
	script := `i=0; until [ "$(stty size 2>/dev/null)" = "40 120" ] || [ $i -ge 600 ]; do i=$((i+1)); sleep 0.05; done; echo "size $(stty size) term $TERM"`
	for _, ex := range streamtest.Executors {
		e, err := ex.New(cfg, streamtest.URL(t, podURL, "exec", "app", true, true, "sh", "-c", script))
		if err != nil {
			t.Fatal(err)
		}
		q := streamtest.NewSizeQueue(remotecommand.TerminalSize{Width: 100, Height: 30}, remotecommand.TerminalSize{Width: 120, Height: 40})
		stdin, stdinW := io.Pipe()
		var out bytes.Buffer
		err = e.StreamWithContext(testCtx(t, time.Minute), remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: true, TerminalSizeQueue: q})
		close(q.Done)
		stdinW.Close()
		if err != nil {
			t.Errorf("%s: %v", ex.Name, err)
		}
		if got := strings.TrimSpace(out.String()); got != "size 40 120 term xterm" {
			t.Errorf("%s: %q, want %q", ex.Name, got, "size 40 120 term xterm")
		}
	}
}

// testKubeExecHangup: a client that goes away takes its exec's process
// with it (podhost exec's rule), seen in the host's /proc. client-go's
// WebSocket client closes its connection when its context ends; its SPDY
// client only sends GOAWAY and keeps the connection while streams are open
// (a killed kubectl closes it: the stream package's TestHangup drops it).
func testKubeExecHangup(t *testing.T, cfg *restclient.Config, podURL string) {
	for i, ex := range streamtest.Executors[:1] {
		arg := strconv.Itoa(4240 + i)
		e, err := ex.New(cfg, streamtest.URL(t, podURL, "exec", "app", false, false, "sh", "-c", "echo up; exec sleep "+arg))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(testCtx(t, time.Minute))
		up, out := io.Pipe()
		client := make(chan error, 1)
		go func() {
			client <- e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: io.Discard})
		}()
		if line, err := bufio.NewReader(up).ReadString('\n'); err != nil || line != "up\n" {
			t.Fatalf("%s: %q, %v", ex.Name, line, err)
		}
		go func() { _, _ = io.Copy(io.Discard, up) }()
		if err := waitFor(30*time.Second, func() (bool, error) { return len(sleepers(arg)) == 1, nil }); err != nil {
			t.Fatalf("%s: no process `sleep %s` on the host: %v", ex.Name, arg, err)
		}
		cancel()
		if err := <-client; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: the client ended with %v", ex.Name, err)
		}
		if err := waitFor(30*time.Second, func() (bool, error) { return len(sleepers(arg)) == 0, nil }); err != nil {
			t.Errorf("%s: `sleep %s` still runs after the client went away: %v", ex.Name, arg, sleepers(arg))
		}
		out.Close()
	}
}

// sleepers are the host's processes running `sleep arg`.
func sleepers(arg string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if string(cmdline) == "sleep\x00"+arg+"\x00" && running(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

var tickRE = regexp.MustCompile(`(?m)^(tick|warn) (\d+)$`)

// testKubeAttach: attach shows what the container writes from now on,
// stdout and stderr apart, none of what its log held before.
func testKubeAttach(t *testing.T, d *podhostd, cfg *restclient.Config, podURL string) {
	for _, ex := range streamtest.Executors {
		before := lastTick(t, d)
		e, err := ex.New(cfg, streamtest.URL(t, podURL, "attach", "app", false, false))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(testCtx(t, time.Minute))
		out, errw := newLineWaiter(), newLineWaiter()
		client := make(chan error, 1)
		go func() { client <- e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: errw}) }()
		first := out.next(t, ex.Name+" stdout")
		firstErr := errw.next(t, ex.Name+" stderr")
		cancel()
		if err := <-client; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: the client ended with %v", ex.Name, err)
		}
		for _, got := range []struct{ line, kind string }{{first, "tick"}, {firstErr, "warn"}} {
			m := tickRE.FindStringSubmatch(got.line)
			if m == nil || m[1] != got.kind {
				t.Errorf("%s: got %q, want a %s line", ex.Name, got.line, got.kind)
				continue
			}
			if n, _ := strconv.Atoi(m[2]); n <= before {
				t.Errorf("%s: attach showed %q, written before it started (log had up to %d)", ex.Name, got.line, before)
			}
		}
	}
}

// lastTick is the highest tick number in app's current log file.
func lastTick(t *testing.T, d *podhostd) int {
	t.Helper()
	p := d.pod("kstream")
	restarts := 0
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "app" {
			restarts = int(cs.RestartCount)
		}
	}
	b, err := os.ReadFile(logs.Path(d.logDir, "default", "kstream", string(p.UID), "app", restarts))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`stdout F tick (\d+)`).FindAllSubmatch(b, -1) {
		n, _ = strconv.Atoi(string(m[1]))
	}
	return n
}

// lineWaiter hands out the lines written to it.
type lineWaiter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func newLineWaiter() *lineWaiter { return &lineWaiter{lines: make(chan string, 1024)} }

func (l *lineWaiter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line)
			return len(p), nil
		}
		select {
		case l.lines <- strings.TrimSuffix(line, "\n"):
		default:
		}
	}
}

func (l *lineWaiter) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case line := <-l.lines:
		return line
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no line", what)
		return ""
	}
}

// testKubePortForward: one port-forward, two connections at once into the
// pod's network namespace — HTTP to its httpd, and bytes to `nc -e wc -c`
// that answers only after the client's half-close — over the WebSocket
// tunnel and over SPDY.
func testKubePortForward(t *testing.T, cfg *restclient.Config, podURL string) {
	for _, d := range streamtest.Dialers {
		local := streamtest.Forward(t, d, cfg, podURL, 8080, 9000)
		var wg sync.WaitGroup
		wg.Go(func() {
			got, err := httpGet("http://" + local[8080] + "/")
			if err != nil || !strings.Contains(got, "hello from podhost") {
				t.Errorf("%s: GET through the forward: %q, %v", d.Name, got, err)
			}
		})
		wg.Go(func() {
			got, err := streamtest.HalfCloseTrip(local[9000], bytes.Repeat([]byte("x"), 1<<20))
			if err != nil || string(got) != fmt.Sprintf("%d\n", 1<<20) {
				t.Errorf("%s: wc through the forward: %q, %v", d.Name, got, err)
			}
		})
		wg.Wait()
	}
}
