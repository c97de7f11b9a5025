package syncer

import (
	"fmt"
	"sync"

	"github.com/podhost/podhost/internal/shimgroup"
	"github.com/podhost/podhost/internal/state"
)

// shimGroups hands out containerd shim groups to new sandboxes. The
// allocator learns the groups of the sandboxes already recorded (from
// before a restart) on first use.
type shimGroups struct {
	groups *shimgroup.Groups
	mu     sync.Mutex
	seeded bool
}

// assign returns the group for new sandbox id; an error only if the
// recorded sandboxes could not be read (tried again next time).
func (g *shimGroups) assign(store Store, id string) (string, error) {
	if g.groups.Size() <= 1 {
		return id, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.seeded {
		if err := g.seed(store); err != nil {
			return "", fmt.Errorf("shim groups: read sandbox records: %w", err)
		}
		g.seeded = true
	}
	return g.groups.Assign(id), nil
}

func (g *shimGroups) seed(store Store) error {
	recs, err := store.ListSandboxes()
	if err != nil {
		return err
	}
	for _, r := range recs {
		g.groups.Add(r.ID, r.ShimGroup)
	}
	return nil
}

// shimGroupOf is the group of sb's containers: the sandbox ID for records
// from before shim groups.
func shimGroupOf(sb state.SandboxRecord) string {
	if sb.ShimGroup != "" {
		return sb.ShimGroup
	}
	return sb.ID
}
