package api

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// statusBackend serves file errors and a runtime status.
type statusBackend struct {
	fakeBackend
	errs    []FileError
	runtime RuntimeStatus
}

func (b statusBackend) FileErrors() []FileError { return b.errs }
func (b statusBackend) Runtime() RuntimeStatus  { return b.runtime }

// /v1/pods/ paths (rollouts, a delete's grace) refuse a namespace or name
// the manifest decoder would, before routing.
func TestInvalidNamesAre400(t *testing.T) {
	reached := false
	c := startServer(t, statusBackend{runtime: RuntimeStatus{Healthy: true}}, func(s *Server) {
		s.EnableGrace(graceFunc(func(string, string, int64) bool { reached = true; return true }))
	})
	ctx := context.Background()
	for _, tt := range []struct {
		ns, name, want string
	}{
		{"..", "web", `invalid namespace "..": a lowercase RFC 1123 label`},
		{"default", "..", `invalid pod name "..": a lowercase RFC 1123 subdomain`},
		{"Default", "web", `invalid namespace "Default"`},
		{"default", "a b", `invalid pod name "a b"`},
	} {
		err := c.SetDeletionGrace(ctx, tt.ns, tt.name, 1)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("grace %s/%s: %v, want %q…", tt.ns, tt.name, err, tt.want)
		}
	}
	if reached {
		t.Fatal("an invalid name reached the backend")
	}
	if err := c.SetDeletionGrace(ctx, "default", "web", 1); err != nil || !reached {
		t.Fatalf("valid pod: %v", err)
	}
}

type graceFunc func(namespace, name string, seconds int64) bool

func (f graceFunc) SetDeletionGrace(namespace, name string, seconds int64) bool {
	return f(namespace, name, seconds)
}

func TestRawDotDotPathIsNotRedirected(t *testing.T) {
	c := startServer(t, statusBackend{runtime: RuntimeStatus{Healthy: true}})
	req, _ := http.NewRequest(http.MethodPost, "http://podhost/v1/pods/../web/grace?seconds=1", nil)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(string(body), `invalid namespace ".."`) {
		t.Fatalf("%s: %q; want 400 invalid namespace", resp.Status, body)
	}
}

func TestWarningsAndReadiness(t *testing.T) {
	since := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	b := statusBackend{
		errs: []FileError{
			{File: "/m/fifo.yaml", Error: "fifo.yaml: not a regular file"},
			{File: "/m/multi.yaml", Error: "multi.yaml: spec.containers: Required value\nmulti.yaml: say \"hi\" \\o/"},
		},
		runtime: RuntimeStatus{Address: "/run/c.sock", Since: since, Error: "connection refused"},
	}
	// The pods' readers get the warning from the Kubernetes API (the
	// daemon's PodsWarning); the files' errors are not the list's warnings
	// (get picks those of the pods it lists, from /v1/errors).
	k := &kubeFake{warning: b.runtime.Warning()}
	c := startServer(t, b, withKube(t, k))
	var got []string
	c.Warn = func(s string) { got = append(got, s) }
	if _, err := c.ListPods(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"containerd at /run/c.sock is unreachable since 2026-11-23T10:00:00Z: connection refused; statuses may be stale",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("warnings\n%q\nwant\n%q", got, want)
	}
	got = nil
	k.warning = ""
	if _, err := c.ListPods(context.Background()); err != nil || got != nil {
		t.Fatalf("healthy: %v, warnings %q", err, got)
	}
	err := c.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "containerd at /run/c.sock is unreachable") {
		t.Fatalf("readyz while containerd is down: %v", err)
	}
	rs, err := c.Runtime(context.Background())
	if err != nil || rs.Healthy || !rs.Since.Equal(since) || rs.Error != "connection refused" {
		t.Fatalf("Runtime = %+v, %v", rs, err)
	}
}

// A state db that cannot be written (full state dir) is a warning and makes
// /readyz fail, as a containerd outage does.
func TestRuntimeWarningStateDB(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rs := RuntimeStatus{Healthy: true, StateDB: StateDBStatus{Path: "/var/lib/podhost/state.db", Since: since, Error: "no space left on device"}}
	want := "state /var/lib/podhost/state.db cannot be written since 2026-01-02T03:04:05Z: no space left on device; running pods are untouched, new pods wait"
	if got := rs.Warning(); got != want {
		t.Fatalf("warning %q", got)
	}
	rs.StateDB.Healthy = true
	if got := rs.Warning(); got != "" {
		t.Fatalf("healthy: %q", got)
	}
}
