package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/podhost/podhost/internal/kubelet/admission"
)

type fakeProber struct {
	ok  bool
	err error
}

func (f fakeProber) RecursiveReadOnlyMounts(ctx context.Context) (bool, error) {
	if _, ok := ctx.Deadline(); !ok {
		return false, errors.New("probe without a deadline")
	}
	return f.ok, f.err
}

// The runtime's recursive read-only support reaches the spec builder's host
// limits; a failed probe counts as no support, with a warning.
func TestRecursiveReadOnlyMounts(t *testing.T) {
	tests := map[fakeProber]struct {
		want bool
		log  string
	}{
		{ok: true}: {true, "recursiveReadOnlyMounts=true"},
		{}:         {false, "recursiveReadOnlyMounts=false"},
		{ok: true, err: errors.New("shim -info: exit 1")}: {false,
			`level=WARN msg="runtime features: recursive read-only mounts taken as unsupported" err="shim -info: exit 1"`},
	}
	for prober, tt := range tests {
		var logs bytes.Buffer
		got, _ := recursiveReadOnlyMounts(context.Background(), prober, slog.New(slog.NewTextHandler(&logs, nil)))
		if got != tt.want || !strings.Contains(logs.String(), tt.log) {
			t.Errorf("%+v: got %v, log %q; want %v, log with %q", prober, got, logs.String(), tt.want, tt.log)
		}
	}
}

// The node name is the kubelet's GetHostname: trimmed, lower-cased.
func TestNodeName(t *testing.T) {
	for _, tt := range []struct{ host, want string }{
		{"node1", "node1"},
		{"Edge-Box-7", "edge-box-7"},
		{" MyHost.Example.COM\n", "myhost.example.com"},
	} {
		if got := admission.NodeName(tt.host); got != tt.want {
			t.Errorf("admission.NodeName(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

// The runtime's answer is kept once given; a failed probe is asked again
// (not cached as "unsupported" for the daemon's life).
func TestFeatureCacheRetriesFailures(t *testing.T) {
	calls := 0
	answers := []error{errors.New("containerd restarting"), nil}
	c := &featureCache{ask: func() (bool, error) {
		err := answers[min(calls, len(answers)-1)]
		calls++
		return err == nil, err
	}}
	if c.get() {
		t.Fatal("a failed probe must read as unsupported")
	}
	second := c.get()
	third := c.get()
	if !second || !third || calls != 2 {
		t.Fatalf("after a failure the probe is asked again, then kept: %v, %v, %d calls", second, third, calls)
	}
}
