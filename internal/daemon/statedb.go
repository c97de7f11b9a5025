package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/podhost/podhost/internal/state"
)

// stateProbePeriod is how often a state db that failed a write is tried
// again (a probe write), so the condition clears by itself once space is
// freed even when nothing else writes.
const stateProbePeriod = 2 * time.Second

// stateDB is what watchStateDB needs of the state db (*state.DB).
type stateDB interface {
	WriteHealth() state.WriteHealth
	ProbeWrite() error
	Path() string
}

// watchStateDB logs when the state db stops and starts taking writes (a
// full state dir: ENOSPC) and, while it does not, probes it every period.
// The API reports the condition (/readyz, `get` warnings, `check`); running
// pods are untouched meanwhile, new pods wait with CreatePodSandboxError.
func watchStateDB(ctx context.Context, db stateDB, log *slog.Logger, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h := db.WriteHealth()
		if !h.OK {
			if !failing {
				log.Error("state db cannot be written; running pods are untouched, new pods wait", "path", db.Path(), "since", h.Since, "err", h.Err)
			}
			_ = db.ProbeWrite()
			h = db.WriteHealth()
		}
		switch {
		case !h.OK:
			failing = true
		case failing:
			log.Info("state db takes writes again", "path", db.Path())
			failing = false
		}
	}
}
