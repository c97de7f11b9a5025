package source

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// manifestServer serves body with an ETag (its version), or status when
// set; it counts full (200) responses and 304s.
type manifestServer struct {
	mu       sync.Mutex
	body     string
	version  int
	status   int
	full     int
	notMod   int
	lastHdrs http.Header
}

func (m *manifestServer) set(body string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.body, m.status = body, 0
	m.version++
}

func (m *manifestServer) fail(status int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status = status
}

func (m *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lastHdrs = r.Header.Clone()
	if m.status != 0 {
		w.WriteHeader(m.status)
		return
	}
	etag := fmt.Sprintf(`"v%d"`, m.version)
	if r.Header.Get("If-None-Match") == etag {
		m.notMod++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	m.full++
	w.Header().Set("ETag", etag)
	_, _ = w.Write([]byte(m.body))
}

func (m *manifestServer) counts() (full, notMod int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.full, m.notMod
}

func newURLSource(t *testing.T, url string, store LastGood) *URLSource {
	t.Helper()
	u, err := NewURL(URLConfig{URL: url, AllowHTTP: true, Headers: map[string]string{"Authorization": "Bearer x"}, LastGood: store})
	if err != nil {
		t.Fatal(err)
	}
	u.loadStored()
	return u
}

func pollSummary(u *URLSource) string {
	u.poll(context.Background())
	s := summary(u.snapshot())
	return strings.ReplaceAll(s, "ERR "+strings.TrimPrefix(u.cfg.URL, "http://"), "ERR")
}

func TestURLSource(t *testing.T) {
	srv := &manifestServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	db := openStore(t)
	u := newURLSource(t, ts.URL, db)

	srv.set(podYAML("web", "img:1") + "---\n" + podYAML("api", "img:1"))
	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{"multi-document", nil, "default/api=img:1 default/web=img:1"},
		{"304 keeps the set", nil, "default/api=img:1 default/web=img:1"},
		{"edit", func() { srv.set(podYAML("web", "img:2")) }, "default/web=img:2"},
		{"500 keeps the set", func() { srv.fail(500) }, "default/web=img:2 ERR kept=default/web"},
		{"garbage keeps the set", func() { srv.set("kind: [") }, "default/web=img:2 ERR kept=default/web"},
		{"invalid pod keeps the set", func() { srv.set(podYAML("Bad_Name", "img:1")) }, "default/web=img:2 ERR kept=default/web"},
		{"v1 List", func() {
			srv.set(`{"apiVersion":"v1","kind":"List","items":[` +
				`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"img:3"}]}},` +
				`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"img:3"}]}}]}`)
		}, "default/a=img:3 default/b=img:3"},
		{"empty body keeps the set", func() { srv.set("") }, "default/a=img:3 default/b=img:3 ERR kept=default/a,default/b"},
		{"cut after a separator keeps the set", func() { srv.set(podYAML("a", "img:3") + "---\n") }, "default/a=img:3 default/b=img:3 ERR kept=default/a,default/b"},
		{"an empty List removes", func() { srv.set(`{"apiVersion":"v1","kind":"List","items":[]}`) }, ""},
	}
	for _, st := range steps {
		if st.change != nil {
			st.change()
		}
		if got := pollSummary(u); got != st.want {
			t.Fatalf("%s: snapshot = %q, want %q", st.name, got, st.want)
		}
	}
	full, notMod := srv.counts()
	if notMod != 1 {
		t.Errorf("304 responses = %d, want 1 (full responses %d)", notMod, full)
	}
	if srv.lastHdrs.Get("Authorization") != "Bearer x" {
		t.Errorf("headers not sent: %v", srv.lastHdrs)
	}
}

// A podhost restarted while the server is down (or serving garbage) runs
// the last good content stored in the state db, flagged with the error.
func TestURLSourceRestartWhileDown(t *testing.T) {
	srv := &manifestServer{}
	ts := httptest.NewServer(srv)
	db := openStore(t)
	srv.set(podYAML("web", "img:1"))
	if got := pollSummary(newURLSource(t, ts.URL, db)); got != "default/web=img:1" {
		t.Fatalf("first = %q", got)
	}
	url := ts.URL
	ts.Close()
	u := newURLSource(t, url, db)
	if got := pollSummary(u); got != "default/web=img:1 ERR kept=default/web" {
		t.Fatalf("after restart with the server down = %q", got)
	}
	// The dir's scanner leaves the URL's record alone.
	if _, err := restart(secureDir(t), db).scan(); err != nil {
		t.Fatal(err)
	}
	if got := pollSummary(newURLSource(t, url, db)); got != "default/web=img:1 ERR kept=default/web" {
		t.Fatalf("after a dir scan = %q", got)
	}
}

func TestURLSourceRunEmitsChanges(t *testing.T) {
	srv := &manifestServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	srv.set(podYAML("web", "img:1"))
	u, err := NewURL(URLConfig{URL: ts.URL, AllowHTTP: true, Period: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan Snapshot)
	go func() { _ = u.Run(ctx, out) }()
	if got := summary(<-out); got != "default/web=img:1" {
		t.Fatalf("first = %q", got)
	}
	srv.set(podYAML("web", "img:2"))
	if got := summary(<-out); got != "default/web=img:2" {
		t.Fatalf("second = %q", got)
	}
	// Many polls later, unchanged content produced no snapshot and every
	// poll after the change was a 304.
	time.Sleep(50 * time.Millisecond)
	select {
	case s := <-out:
		t.Fatalf("unexpected snapshot %q", summary(s))
	default:
	}
	if full, notMod := srv.counts(); full != 2 || notMod == 0 {
		t.Errorf("full responses = %d, 304s = %d; want 2 and > 0", full, notMod)
	}
}

func TestCombine(t *testing.T) {
	dir := secureDir(t)
	writeFile(t, dir, "web.yaml", podYAML("web", "img:1"))
	writeFile(t, dir, "a.yaml", cyclePod("a", "b"))
	writeFile(t, dir, "b.yaml", cyclePod("b", "a"))
	writeFile(t, dir, "c.yaml", cyclePod("c", "web"))
	snap, err := Scan(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	dup, _ := decodeURL("http://h/m", []byte(podYAML("web", "img:2")+"---\n"+podYAML("extra", "img:2")))
	got := Combine(snap, Snapshot{Pods: dup.Pods})
	if s := summary(got); s != "default/c=img:1 default/extra=img:2 default/web=img:1 ERR a.yaml ERR b.yaml ERR m" {
		t.Fatalf("Combine = %q", s)
	}
	for _, want := range []string{"a.yaml: pod default/a: podhost.io/after: dependency cycle a -> b -> a (pod not started)",
		"http://h/m: duplicate pod default/web, already defined in " + dir + "/web.yaml"} {
		found := false
		for _, fe := range got.Errors {
			found = found || fe.Error() == want
		}
		if !found {
			t.Errorf("no error %q in %v", want, got.Errors)
		}
	}
}

func cyclePod(name, after string) string {
	return strings.Replace(podYAML(name, "img:1"), "metadata:\n", "metadata:\n  annotations:\n    podhost.io/after: "+after+"\n", 1)
}

// Merge sends the first (even empty) merged snapshot once every input sent
// one, then only changes.
func TestMerge(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b, out := make(chan Snapshot, 1), make(chan Snapshot, 1), make(chan Snapshot, 1)
	go Merge(ctx, out, a, b)
	a <- Snapshot{}
	select {
	case s := <-out:
		t.Fatalf("sent %q before every input's first snapshot", summary(s))
	case <-time.After(20 * time.Millisecond):
	}
	b <- Snapshot{}
	if s := <-out; len(s.Pods) != 0 {
		t.Fatalf("first = %q", summary(s))
	}
	pods, _ := decodeURL("http://h/m", []byte(podYAML("web", "img:1")))
	b <- Snapshot{Pods: pods.Pods}
	if s := <-out; summary(s) != "default/web=img:1" {
		t.Fatalf("second = %q", summary(s))
	}
}

// ConfigMaps and Secrets served beside the pods reach the snapshot; content
// holding a Secret is never stored in the state db (the dir's rule), and
// drops an older stored copy.
func TestURLSourceConfigData(t *testing.T) {
	srv := &manifestServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	db := openStore(t)
	u := newURLSource(t, ts.URL, db)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: b}\n"
	sec := "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: hunter2}\n"
	stored := func() string {
		recs, err := db.ListManifests()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Path == ts.URL {
				return string(r.Data)
			}
		}
		return ""
	}

	srv.set(podYAML("web", "img:1") + "---\n" + cm)
	u.poll(context.Background())
	if s := u.snapshot(); len(s.Pods) != 1 || len(s.ConfigMaps) != 1 || s.ConfigMaps[0].Data["a"] != "b" {
		t.Fatalf("snapshot %d pods, configMaps %v", len(s.Pods), s.ConfigMaps)
	}
	if !strings.Contains(stored(), "kind: ConfigMap") {
		t.Fatalf("content without a Secret not stored: %q", stored())
	}

	srv.set(podYAML("web", "img:1") + "---\n" + cm + "---\n" + sec)
	u.poll(context.Background())
	if s := u.snapshot(); len(s.Secrets) != 1 || s.Secrets[0].Name != "creds" {
		t.Fatalf("secrets %v", s.Secrets)
	}
	if got := stored(); got != "" {
		t.Fatalf("content holding a Secret stored: %q", got)
	}
}
