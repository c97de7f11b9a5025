//go:build integration

package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// manifestHTTP serves manifests on 127.0.0.1 with an ETag; it counts full
// (200) responses. fail makes it answer 500; stop/restart close and reopen
// its listener on the same address; delay holds every answer that long.
type manifestHTTP struct {
	mu      sync.Mutex
	body    string
	version int
	status  int
	full    int
	delay   time.Duration
	addr    string
	srv     *http.Server
}

func (m *manifestHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	delay := m.delay
	m.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.status != 0 {
		w.WriteHeader(m.status)
		return
	}
	etag := fmt.Sprintf(`"v%d"`, m.version)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	m.full++
	w.Header().Set("ETag", etag)
	_, _ = w.Write([]byte(m.body))
}

func (m *manifestHTTP) set(body string, status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.body, m.status = body, status
	m.version++
}

func (m *manifestHTTP) setDelay(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.delay = d
}

func (m *manifestHTTP) fullResponses() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.full
}

func (m *manifestHTTP) listen(t *testing.T) {
	t.Helper()
	addr := m.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	m.addr = ln.Addr().String()
	m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = m.srv.Serve(ln) }()
}

func (m *manifestHTTP) stop() { _ = m.srv.Close() }

// TestManifestURL: pods served by a URL run, edits propagate within a poll,
// unchanged content is answered 304 (ETag), a 500 or garbage keeps the
// pods (with the error visible in get), and a podhost restarted while the
// server is down keeps them too (last good copy in the state db).
func TestManifestURL(t *testing.T) {
	srv := &manifestHTTP{}
	srv.listen(t)
	t.Cleanup(srv.stop)
	url := "http://" + srv.addr + "/pods.yaml"
	d := newPodhostd(t)
	useManifestURL(t, d, url)
	// Every test pod is gone before the daemon's teardown checks.
	t.Cleanup(func() { srv.set(emptyList, 0) })

	srv.set(sleeper("web", 1, ""), 0)
	d.start()
	web := d.waitRunning("web")
	if src := web.Annotations[wellknown.AnnotationConfigSource]; src != url {
		t.Fatalf("config source %q, want %q", src, url)
	}

	if wide := d.mustCLI("get", "pods", "-o", "wide"); !strings.Contains(wide, "SOURCE") || !strings.Contains(wide, url) {
		t.Fatalf("get pods -o wide does not show the URL source:\n%s", wide)
	}

	start := time.Now()
	srv.set(sleeper("web", 1, "")+"---\n"+sleeper("api", 1, ""), 0)
	d.waitPod("api", 10*time.Second, "added", func(p *corev1.Pod) bool { return p != nil })
	t.Logf("add seen after %v", time.Since(start))
	d.waitRunning("api")

	full := srv.fullResponses()
	time.Sleep(5 * 300 * time.Millisecond) // five polls: each must be a 304
	if n := srv.fullResponses(); n != full {
		t.Fatalf("full responses went from %d to %d with unchanged content: ETag ignored", full, n)
	}

	srv.set("", 500)
	d.waitCLI(10*time.Second, "the URL error", func(_, stderr string) bool {
		return strings.Contains(stderr, "500")
	}, "get", "pods")
	srv.set("kind: [garbage", 0)
	d.waitCLI(10*time.Second, "the garbage error", func(_, stderr string) bool {
		return strings.Contains(stderr, "pods.yaml") && !strings.Contains(stderr, "500")
	}, "get", "pods")
	if p := d.pod("web"); p == nil || p.UID != web.UID || !allRunning(p) {
		t.Fatalf("web after 500 and garbage: %v", p)
	}

	srv.set(sleeper("web", 1, "")+"---\n"+sleeper("api", 1, ""), 0)
	d.waitCLI(10*time.Second, "the error cleared", func(_, stderr string) bool { return !strings.Contains(stderr, "Warning") }, "get", "pods")
	d.kill(syscall.SIGTERM)
	srv.stop()
	d.start()
	if p := d.pod("web"); p == nil || p.UID != web.UID {
		t.Fatalf("web after a restart with the server down: %v\n%s", p, d.logs())
	}
	if p := d.pod("api"); p == nil {
		t.Fatalf("api lost after a restart with the server down\n%s", d.logs())
	}
	srv.listen(t)

	srv.set(sleeper("api", 1, ""), 0)
	if err := waitFor(10*time.Second, func() (bool, error) { return d.pod("web") == nil, nil }); err != nil {
		t.Fatalf("web not removed from the URL's set: %v\n%s", err, d.logs())
	}
}

// emptyList is a complete response without a pod: it removes the URL's
// pods (an empty body keeps them).
const emptyList = "apiVersion: v1\nkind: List\nitems: []\n"

// useManifestURL adds url (polled every 300 ms; http:// allowed) to d's
// config.
func useManifestURL(t *testing.T, d *podhostd, url string) {
	t.Helper()
	cfg, err := os.ReadFile(d.configPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg = append(cfg, fmt.Sprintf("manifestURL: %s\nmanifestURLAllowHTTP: true\nmanifestURLPeriod: 300ms\n", url)...)
	if err := os.WriteFile(d.configPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestManifestURLSlowAtStart: a podhost restarted while its manifest URL
// takes longer to answer than a housekeeping period (2 s) adopts the pods
// of the manifest dir and of the URL without restarting any. Until the
// first snapshot no pod is desired, and housekeeping took every running
// pod for an orphan: it tore them down and made them anew (new sandbox,
// new IP, new container).
func TestManifestURLSlowAtStart(t *testing.T) {
	srv := &manifestHTTP{}
	srv.listen(t)
	t.Cleanup(srv.stop)
	d := newPodhostd(t)
	useManifestURL(t, d, "http://"+srv.addr+"/pods.yaml")
	t.Cleanup(func() { srv.setDelay(0); srv.set(emptyList, 0) })
	srv.set(sleeper("from-url", 1, ""), 0)
	d.writeManifest("from-dir.yaml", sleeper("from-dir", 1, ""))
	d.start()
	before := map[string]*corev1.Pod{}
	pids := map[string]int{}
	for _, n := range []string{"from-url", "from-dir"} {
		before[n] = d.waitRunning(n)
		pids[n] = containerPID(t, before[n], "main")
	}
	d.kill(syscall.SIGTERM)
	const delay = 5 * time.Second
	srv.setDelay(delay)
	start := time.Now()
	d.start() // ready once every pod of the first snapshot synced
	if took := time.Since(start); took < delay-time.Second {
		t.Fatalf("ready after %v: the manifest URL's first answer was not waited for", took)
	}
	for n, old := range before {
		p := d.waitPod(n, time.Second, "adopted", allRunning)
		cs, was := p.Status.ContainerStatuses[0], old.Status.ContainerStatuses[0]
		if p.UID != old.UID || cs.ContainerID != was.ContainerID || cs.RestartCount != 0 || p.Status.PodIP != old.Status.PodIP {
			t.Fatalf("%s not adopted: %s, was %s\n%s", n, statusSummary(p), statusSummary(old), d.logs())
		}
		assertTaskPID(t, p, "main", pids[n])
	}
	if strings.Contains(d.logs(), "orphaned runtime pod") {
		t.Fatalf("a pod was taken for an orphan:\n%s", d.logs())
	}
}
