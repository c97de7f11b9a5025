package source

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
)

// polled is what the polled sources (the manifest URL, the manifest
// artifact) share: the last good content and its objects, the last error,
// the last good copy in the state db under the source's display name, and
// the poll loop.
type polled struct {
	display string // the source as shown: logs, errors, config-source, the state db key
	what    string // "manifest URL", "manifest artifact": log lines
	log     *slog.Logger
	store   LastGood
	// decode turns stored or fetched content into objects (display is its name).
	decode func(data []byte) (manifest.Objects, error)

	data    []byte           // last good content
	good    manifest.Objects // decoded from data
	lastErr error
}

// run polls until ctx is done. It emits a snapshot after the first poll
// (the stored last good content stands in if that poll fails) and after
// each change. It returns nil when ctx is done.
func (p *polled) run(ctx context.Context, out chan<- Snapshot, period time.Duration, poll func(context.Context)) error {
	p.loadStored()
	t := time.NewTicker(period)
	defer t.Stop()
	sent := ""
	for {
		poll(ctx)
		snap := p.snapshot()
		if key := snap.key(); key != sent || sent == "" {
			select {
			case out <- snap:
				sent = key
			case <-ctx.Done():
				return nil
			}
			if snap.Errors != nil {
				p.log.Warn(p.what+" failed; keeping the last good pods", "err", p.lastErr, "pods", len(snap.Pods))
			} else {
				p.log.Info(p.what+" changed", "pods", len(snap.Pods))
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (p *polled) snapshot() Snapshot {
	s := Snapshot{Pods: slices.Clone(p.good.Pods), ConfigMaps: slices.Clone(p.good.ConfigMaps), Secrets: slices.Clone(p.good.Secrets),
		Workloads: slices.Clone(p.good.Workloads), Services: slices.Clone(p.good.Services), ServiceAccounts: slices.Clone(p.good.ServiceAccounts),
		Ignored: slices.Clone(p.good.Ignored)}
	if p.lastErr != nil {
		fe := FileError{File: p.display, Err: p.lastErr}
		for _, pod := range p.good.Pods {
			fe.Kept = append(fe.Kept, manifest.FullName(pod))
		}
		s.Errors = []FileError{fe}
	}
	return s
}

// setGood makes data (decoded: objs) the last good content and persists it.
func (p *polled) setGood(data []byte, objs manifest.Objects) {
	p.good, p.data, p.lastErr = objs, data, nil
	p.persist(data, len(objs.Secrets) > 0)
}

// persist stores the last good content, as the dir's scanner does a file:
// content holding a Secret is never stored (Secret values must not reach
// the disk) and replaces an older stored copy by none; its pods then last
// across a podhost restart only while the source answers.
func (p *polled) persist(data []byte, hasSecret bool) {
	if p.store == nil {
		return
	}
	var err error
	if hasSecret {
		err = p.store.UpdateManifests(nil, []string{p.display})
	} else {
		err = p.store.UpdateManifests([]records.ManifestRecord{{Path: p.display, Data: data}}, nil)
	}
	if err != nil {
		p.log.Warn("persist last good "+p.what+" content", "err", err)
	}
}

// loadStored takes the persisted last good content of the source, if any,
// and removes the records of other polled sources (another URL, or this
// one's before redaction: it may hold credentials).
func (p *polled) loadStored() {
	if p.store == nil || p.data != nil {
		return
	}
	recs, err := p.store.ListManifests()
	if err != nil {
		p.log.Error("read last good "+p.what+" content", "err", err)
		return
	}
	var stale []string
	for _, r := range recs {
		if IsURLKey(r.Path) && r.Path != p.display {
			stale = append(stale, r.Path)
		}
		if r.Path != p.display {
			continue
		}
		objs, err := p.decode(r.Data)
		if err != nil {
			p.log.Warn("stored last good "+p.what+" content no longer decodes; ignored", "err", err)
			continue
		}
		p.good, p.data = objs, r.Data
	}
	if len(stale) > 0 {
		if err := p.store.UpdateManifests(nil, stale); err != nil {
			p.log.Warn("remove stale "+p.what+" content", "err", err)
		}
	}
}
