package source

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// hitCounter serves a pod and counts requests, keeping the last one's
// headers.
type hitCounter struct {
	hits atomic.Int32
	hdr  atomic.Value // http.Header
}

func (h *hitCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.hits.Add(1)
	h.hdr.Store(r.Header.Clone())
	_, _ = w.Write([]byte(podYAML("evil", "evil:1")))
}

func redirectTo(target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
	})
}

func TestURLRefusesHTTPWithoutAllowHTTP(t *testing.T) {
	_, err := NewURL(URLConfig{URL: "http://config.example/pods"})
	if err == nil || !strings.Contains(err.Error(), "manifestURLAllowHTTP") {
		t.Fatalf("NewURL(http://) = %v, want a refusal naming manifestURLAllowHTTP", err)
	}
	if _, err := NewURL(URLConfig{URL: "ftp://config.example/pods", AllowHTTP: true}); err == nil {
		t.Fatal("ftp:// accepted")
	}
}

// Redirects stay on the URL's host and never go from https to http: the
// pod served elsewhere is not taken, and the other host never sees the
// request (nor its custom headers).
func TestURLRedirectPolicy(t *testing.T) {
	other := &hitCounter{}
	plain := httptest.NewServer(other)
	defer plain.Close()
	otherTLS := httptest.NewTLSServer(other)
	defer otherTLS.Close()

	cases := []struct{ name, to string }{
		{"https to http", plain.URL},
		{"https to another port", otherTLS.URL},
		{"https to another host name", strings.Replace(otherTLS.URL, "127.0.0.1", "localhost", 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from := httptest.NewTLSServer(redirectTo(tc.to))
			defer from.Close()
			u, err := NewURL(URLConfig{URL: from.URL + "/pods", Client: from.Client(), Headers: map[string]string{"X-Token": "s3cret"}})
			if err != nil {
				t.Fatal(err)
			}
			before := other.hits.Load()
			u.poll(context.Background())
			s := u.snapshot()
			if len(s.Pods) != 0 || len(s.Errors) != 1 || !strings.Contains(s.Errors[0].Err.Error(), "refused") {
				t.Fatalf("snapshot %s, errors %v: want the redirect refused", summary(s), s.Errors)
			}
			if n := other.hits.Load() - before; n != 0 {
				t.Fatalf("the other server got %d requests", n)
			}
			t.Logf("%s: %v", tc.name, s.Errors[0].Err)
		})
	}

	t.Run("same host", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("/pods", other)
		mux.Handle("/old/", http.RedirectHandler("/pods", http.StatusMovedPermanently))
		srv := httptest.NewTLSServer(mux)
		defer srv.Close()
		u, err := NewURL(URLConfig{URL: srv.URL + "/old/", Client: srv.Client(), Headers: map[string]string{"X-Token": "t"}})
		if err != nil {
			t.Fatal(err)
		}
		u.poll(context.Background())
		if s := u.snapshot(); summary(s) != "default/evil=evil:1" {
			t.Fatalf("same-host redirect: %s %v", summary(s), s.Errors)
		}
		if h := other.hdr.Load().(http.Header); h.Get("X-Token") != "t" {
			t.Fatalf("headers after a same-host redirect: %v", h)
		}
	})
}

// rawServer answers every connection with resp, byte for byte, then
// closes it: responses net/http's server would never send.
func rawServer(t *testing.T, resp *atomic.Value) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				_, _ = c.Write([]byte(resp.Load().(string)))
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/pods"
}

// An empty or cut-off response keeps the last good pods; only a complete
// one that lists no pod removes them.
func TestURLIncompleteResponsesKeepTheLastGoodSet(t *testing.T) {
	two := podYAML("a", "img:1") + "---\n" + podYAML("b", "img:1")
	framedOK := func(body string) string {
		return fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	var resp atomic.Value
	resp.Store(framedOK(two))
	u, err := NewURL(URLConfig{URL: rawServer(t, &resp), AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	const kept = "default/a=img:1 default/b=img:1 ERR pods kept=default/a,default/b"
	steps := []struct{ name, resp, want string }{
		{"complete", framedOK(two), "default/a=img:1 default/b=img:1"},
		{"empty 200", framedOK(""), kept},
		{"only blank lines and comments", framedOK("\n# nothing\n"), kept},
		{"shorter than its Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 400\r\n\r\n" + podYAML("a", "img:1") + "---\n", kept},
		{"chunked without its last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(podYAML("a", "img:1")+"---\n"), kept},
		{"ended by the connection's close", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + podYAML("a", "img:1"), kept},
		{"ends with a separator", framedOK(podYAML("a", "img:1") + "---\n"), kept},
		{"complete again", framedOK(two), "default/a=img:1 default/b=img:1"},
		{"an empty List removes", framedOK("apiVersion: v1\nkind: List\nitems: []\n"), ""},
	}
	for _, st := range steps {
		resp.Store(st.resp)
		u.poll(context.Background())
		if got := summary(u.snapshot()); got != st.want {
			t.Fatalf("%s: snapshot %q, want %q", st.name, got, st.want)
		}
		if u.lastErr != nil {
			t.Logf("%s: %v", st.name, u.lastErr)
		}
	}
}

// chunk encodes s as one chunk, without the terminating zero chunk.
func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

// Credentials in the URL (user info, query values) never reach the pods'
// annotations, the errors, the log or the state db.
func TestURLCredentialsAreRedacted(t *testing.T) {
	srv := &manifestServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	srv.set(podYAML("web", "img:1"))
	raw := strings.Replace(ts.URL, "http://", "http://admin:s3cret@", 1) + "/pods.yaml?token=s3cret&node=n1"
	var logs bytes.Buffer
	db := openStore(t)
	// what a podhost before redaction stored: the URL with its credentials as the key
	if err := db.UpdateManifests([]records.ManifestRecord{{Path: raw, Data: []byte(podYAML("old", "img:0"))}}, nil); err != nil {
		t.Fatal(err)
	}
	u, err := NewURL(URLConfig{URL: raw, AllowHTTP: true, LastGood: db, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Snapshot, 4)
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx, out) }()
	first := <-out
	srv.fail(http.StatusInternalServerError)
	u.poll(ctx) // a failure: its error names the URL
	failed := u.snapshot()
	cancel()
	<-done
	u.log.Warn("manifest URL failed", "err", failed.Errors[0].Err) // as Run logs it
	ts.Close()
	u.poll(context.Background()) // connection refused

	var seen []string
	seen = append(seen, first.Pods[0].Annotations[wellknown.AnnotationConfigSource], failed.Errors[0].File,
		failed.Errors[0].Err.Error(), u.lastErr.Error(), logs.String())
	recs, _ := db.ListManifests()
	for _, r := range recs {
		seen = append(seen, r.Path)
	}
	for _, s := range seen {
		if strings.Contains(s, "s3cret") || strings.Contains(s, "admin") {
			t.Errorf("credentials shown: %q", s)
		}
	}
	want := strings.Replace(ts.URL, "http://", "http://REDACTED@", 1) + "/pods.yaml?node=REDACTED&token=REDACTED"
	if got := first.Pods[0].Annotations[wellknown.AnnotationConfigSource]; got != want {
		t.Errorf("config-source %q, want %q", got, want)
	}
}
