package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/ops/recovery"
)

// openState opens the state db; a damaged file is moved aside and replaced
// by a fresh one (state.OpenRecover), which rebuildState then refills.
func openState(cfg *config.Config, log *slog.Logger) (*state.DB, *state.Recovery, error) {
	db, rec, err := state.OpenRecover(filepath.Join(cfg.StateDir, "state.db"))
	if rec != nil {
		log.Warn("state db was damaged: moved aside, starting from a fresh one and rebuilding from containerd",
			"reason", rec.Reason, "damagedCopy", rec.DamagedCopy)
	}
	return db, rec, err
}

// rebuildState writes back the sandbox records, allocations and boot id of
// running pods that the db lost (damaged, deleted), before anything syncs:
// without them the syncer would kill and recreate every pod. A no-op when
// the db is intact.
func rebuildState(ctx context.Context, cfg *config.Config, log *slog.Logger, db *state.DB, rt recovery.Runtime, cg recovery.Cgroups, boot string, rec *state.Recovery) error {
	why := "state db was missing or empty"
	if rec != nil {
		why = fmt.Sprintf("%s; damaged copy kept at %s", rec.Reason, rec.DamagedCopy)
	} else if !db.Fresh() {
		why = "sandbox records were missing"
	}
	res, err := recovery.Rebuild(ctx, recovery.Config{
		RunDir: cfg.RunDir, CNICacheDir: filepath.Join(cfg.StateDir, "cni-cache"), BootID: boot,
		Pods: func() (map[types.UID]*corev1.Pod, error) {
			snap, err := source.Scan(cfg.ManifestDir, cfg.AllowInsecureManifests)
			out := make(map[types.UID]*corev1.Pod, len(snap.Pods))
			for _, p := range snap.Pods {
				out[p.UID] = p
			}
			return out, err
		},
		Pinned: sandbox.Exists, Why: why, Logger: log,
	}, rt, cg, db)
	if err != nil {
		return fmt.Errorf("rebuild state from containerd: %w", err)
	}
	if len(res.Pods) == 0 && rec == nil {
		return nil
	}
	log.Warn("state rebuilt from the running containers", "pods", len(res.Pods), "sandboxes", res.Sandboxes,
		"allocations", res.Allocations, "why", why)
	note := state.Recovery{At: time.Now().UTC(), Reason: why, Adopted: len(res.Pods)}
	if rec != nil {
		note.At, note.DamagedCopy = rec.At, rec.DamagedCopy
	}
	if err := state.WriteNote(db.Path(), note); err != nil {
		log.Warn("record the rebuild for podhost check", "err", err)
	}
	return nil
}
