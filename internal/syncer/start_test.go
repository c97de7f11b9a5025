package syncer

import (
	"context"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestScopeStopTimeoutAnnotation(t *testing.T) {
	for _, tt := range []struct {
		grace time.Duration
		want  string
	}{
		{30 * time.Second, "uint64 30000000"},
		{0, "uint64 1000000"}, // at least 1 s, as the pod workers' grace
	} {
		s := &specs.Spec{}
		if err := withScopeStopTimeout(tt.grace)(context.Background(), nil, nil, s); err != nil {
			t.Fatal(err)
		}
		if got := s.Annotations["org.systemd.property.TimeoutStopUSec"]; got != tt.want {
			t.Fatalf("grace %v: annotation %q, want %q", tt.grace, got, tt.want)
		}
	}
}
