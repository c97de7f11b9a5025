package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/services/api"
)

// stateProbePeriod is how often the state dir's health is checked; a state
// db that failed a write is then tried again (a probe write), so the
// condition clears by itself once space is freed.
const stateProbePeriod = 2 * time.Second

// minStateDirFree: below this many free bytes the state dir counts as full
// (bbolt may still commit into free pages of its file while the CNI cache,
// volumes and the next db growth under the same dir already fail).
const minStateDirFree = 1 << 20

// stateDB is what the state health needs of the state db (*state.DB).
type stateDB interface {
	WriteHealth() state.WriteHealth
	ProbeWrite() error
	Path() string
}

// stateHealth tracks whether podhost's state dir takes writes: the state
// db's last commit and the dir's free space. The API reports it (/readyz,
// `get` warnings, `check`); running pods are untouched meanwhile, new pods
// wait with the error in their status.
type stateHealth struct {
	db   stateDB
	log  *slog.Logger
	free func(dir string) (uint64, error)

	mu     sync.Mutex
	status api.StateDBStatus
}

func newStateHealth(db stateDB, log *slog.Logger) *stateHealth {
	return &stateHealth{db: db, log: log, free: freeBytes, status: api.StateDBStatus{Path: db.Path(), Healthy: true}}
}

// Status is the last check's result.
func (h *stateHealth) Status() api.StateDBStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status
}

// Run checks every period until ctx is done.
func (h *stateHealth) Run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.check()
		}
	}
}

func (h *stateHealth) check() {
	errMsg := ""
	if w := h.db.WriteHealth(); !w.OK {
		_ = h.db.ProbeWrite() // only while failing: a healthy db gets no extra writes
		if w = h.db.WriteHealth(); !w.OK {
			errMsg = w.Err
		}
	}
	dir := filepath.Dir(h.db.Path())
	if avail, err := h.free(dir); err == nil && avail < minStateDirFree && errMsg == "" {
		errMsg = fmt.Sprintf("state dir %s is full (%d bytes free)", dir, avail)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.status.Healthy
	switch {
	case errMsg != "" && was:
		h.status = api.StateDBStatus{Path: h.db.Path(), Since: time.Now(), Error: errMsg}
		h.log.Error("state dir cannot be written; running pods are untouched, new pods wait", "path", h.db.Path(), "err", errMsg)
	case errMsg != "":
		h.status.Error = errMsg
	case !was:
		h.status = api.StateDBStatus{Path: h.db.Path(), Healthy: true}
		h.log.Info("state dir takes writes again", "path", h.db.Path())
	}
}

func freeBytes(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
