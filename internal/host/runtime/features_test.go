package runtime

import (
	"testing"

	"github.com/opencontainers/runtime-spec/specs-go/features"
)

func TestSupportsRecursiveReadOnly(t *testing.T) {
	runc := &features.Features{MountOptions: []string{"ro", "rbind", "rro", "rrw"}}
	old := &features.Features{MountOptions: []string{"ro", "rbind"}}
	tests := []struct {
		name     string
		features any
		kernel   bool
		want     bool
	}{
		{"runc lists rro", runc, true, true},
		{"kernel before 5.12", runc, false, false},
		{"runc without rro", old, true, false},
		{"no features", nil, true, false},
		{"nil features", (*features.Features)(nil), true, false},
		{"not runc-compatible", "features", true, false},
	}
	for _, tt := range tests {
		if got := supportsRecursiveReadOnly(tt.features, tt.kernel); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}
