package daemon

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/records"
)

// eventExpiryPeriod is how often a deleted pod's expired events are
// looked for.
const eventExpiryPeriod = 5 * time.Minute

// expireEvents deletes, every period until ctx ends, the stored events of
// pods that are gone (neither shown nor recorded) an hour after their last
// one (records.EventTTL), as the API server's event TTL.
func (d *daemon) expireEvents(ctx context.Context, b *backend, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		keep, err := d.db.RecordedPods()
		if err != nil {
			d.log.Warn("expire events: list pods", "err", err)
			continue
		}
		if keep == nil {
			keep = map[types.UID]bool{}
		}
		for _, p := range b.Pods() {
			keep[p.UID] = true
		}
		if n, err := d.db.ExpireEvents(time.Now().Add(-records.EventTTL), keep); err != nil {
			d.log.Warn("expire events", "err", err)
		} else if n > 0 {
			d.log.Debug("expired the events of deleted pods", "pods", n)
		}
	}
}
