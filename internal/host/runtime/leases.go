package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// leaseExpiry bounds a lease whose owner died and whose namespace no
// podhost collects any more (containerd deletes it then).
const leaseExpiry = time.Hour

// staleLeaseAge: a podhost lease of a live process other than this one
// (e.g. a `podhost images pull`) is left alone for this long.
const staleLeaseAge = 30 * time.Minute

// withLease runs fn with ctx holding a new podhost lease, deleted when fn
// returns (even if ctx was cancelled meanwhile). ctx must carry the namespace.
func (r *Runtime) withLease(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := leases.FromContext(ctx); ok {
		return fn(ctx)
	}
	id := newLeaseID()
	r.inflight.Store(id, true)
	defer r.inflight.Delete(id)
	ls := r.client.LeasesService()
	l, err := ls.Create(ctx, leases.WithID(id), leases.WithExpiration(leaseExpiry), leases.WithLabels(map[string]string{
		wellknown.LabelLease: "true", wellknown.LabelLeaseOwner: r.owner,
	}))
	if err != nil {
		return fmt.Errorf("create lease: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := ls.Delete(dctx, l); err != nil && !errdefs.IsNotFound(err) {
			r.log().Warn("delete lease (housekeeping retries)", "lease", id, "err", err)
		}
	}()
	return fn(leases.WithLease(ctx, id))
}

func newLeaseID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "podhost-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + hex.EncodeToString(b)
}

// CollectGarbage deletes what a cut create left in containerd: podhost
// leases no live create owns (their owner process is gone, or it is this
// process and no create of it holds the lease any more, or they are older
// than staleLeaseAge), then rootfs snapshots labelled with a container ID
// that has no container and no create in flight. Housekeeping calls it.
func (r *Runtime) CollectGarbage(ctx context.Context) error {
	ctx = r.nsctx(ctx)
	var errs []error
	ls := r.client.LeasesService()
	all, err := ls.List(ctx, fmt.Sprintf("labels.%q==true", wellknown.LabelLease))
	if err != nil {
		return fmt.Errorf("collect garbage: list leases: %w", err)
	}
	for _, l := range all {
		if !r.orphanLease(l, time.Now()) {
			continue
		}
		// NotFound: a create that was in flight during the list finished
		// and deleted its own lease since.
		switch err := ls.Delete(ctx, l, leases.SynchronousDelete); {
		case err == nil:
			r.log().Info("deleted orphaned lease", "lease", l.ID, "owner", l.Labels[wellknown.LabelLeaseOwner], "created", l.CreatedAt)
		case !errdefs.IsNotFound(err):
			errs = append(errs, fmt.Errorf("delete lease %s: %w", l.ID, err))
		}
	}
	if err := r.removeOrphanSnapshots(ctx, r.snapshotter("")); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// orphanLease decides whether lease l is nobody's any more.
func (r *Runtime) orphanLease(l leases.Lease, now time.Time) bool {
	if _, ok := r.inflight.Load(l.ID); ok {
		return false
	}
	owner := l.Labels[wellknown.LabelLeaseOwner]
	switch {
	case owner == r.owner: // ours, and no create holds it: its delete failed
		return true
	case now.Sub(l.CreatedAt) > staleLeaseAge:
		return true
	default:
		return !ownerAlive(owner)
	}
}

func (r *Runtime) removeOrphanSnapshots(ctx context.Context, sn string) error {
	var keys []string
	err := r.client.SnapshotService(sn).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if id := info.Labels[wellknown.LabelSnapshotContainer]; id != "" && info.Kind == snapshots.KindActive {
			keys = append(keys, info.Name)
		}
		return nil
	}, fmt.Sprintf("labels.%q", wellknown.LabelSnapshotContainer))
	if err != nil {
		return fmt.Errorf("collect garbage: walk snapshots: %w", err)
	}
	if len(keys) == 0 {
		return nil
	}
	// One list, not a Get per snapshot: the pass must not cost a call per
	// pod. Creates in flight are taken before the list: one that finishes
	// after it was in flight, one that starts later has no snapshot yet.
	busy := map[string]bool{}
	r.inflight.Range(func(k, _ any) bool { busy[k.(string)] = true; return true })
	cs, err := r.client.ContainerService().List(ctx)
	if err != nil {
		return fmt.Errorf("collect garbage: list containers: %w", err)
	}
	exists := make(map[string]bool, len(cs))
	for _, c := range cs {
		exists[c.ID] = true
	}
	var errs []error
	for _, key := range keys {
		if busy[key] || exists[key] {
			continue
		}
		r.log().Info("removing orphaned snapshot", "snapshotter", sn, "key", key)
		if err := r.client.SnapshotService(sn).Remove(ctx, key); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove snapshot %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// processOwner identifies this process across PID reuse.
func processOwner() string {
	pid := os.Getpid()
	return fmt.Sprintf("%d-%d", pid, procStartTime(pid))
}

// ownerAlive reports whether the process a lease owner label names runs.
// Unparsable owners count as alive (age decides).
func ownerAlive(owner string) bool {
	p, s, ok := strings.Cut(owner, "-")
	if !ok {
		return true
	}
	pid, err1 := strconv.Atoi(p)
	start, err2 := strconv.ParseUint(s, 10, 64)
	if err1 != nil || err2 != nil {
		return true
	}
	return procStartTime(pid) == start
}

// procStartTime is field 22 of /proc/<pid>/stat (0 if the process is gone).
func procStartTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}
