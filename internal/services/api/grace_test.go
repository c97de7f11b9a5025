package api

import (
	"errors"
	"testing"
)

type recordGraces map[string]int64

func (g recordGraces) SetDeletionGrace(namespace, name string, seconds int64) bool {
	if name == "nope" {
		return false
	}
	g[namespace+"/"+name] = seconds
	return true
}

// A delete's grace period reaches the backend; an unknown pod is
// ErrNotFound; a negative period is refused.
func TestDeletionGrace(t *testing.T) {
	g := recordGraces{}
	c := startServer(t, fakeBackend{}, func(s *Server) { s.EnableGrace(g) })
	if err := c.SetDeletionGrace(t.Context(), "infra", "web", 3); err != nil || g["infra/web"] != 3 {
		t.Fatalf("SetDeletionGrace = %v, recorded %v", err, g)
	}
	if err := c.SetDeletionGrace(t.Context(), "default", "nope", 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown pod: %v, want ErrNotFound", err)
	}
	if err := c.SetDeletionGrace(t.Context(), "default", "web", -1); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("negative seconds: %v, want refused", err)
	}
}
