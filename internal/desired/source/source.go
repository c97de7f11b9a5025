// Package source watches podhost's manifest directory and turns its files
// into snapshots of the desired pods.
//
// Files: *.yaml, *.yml, *.json, not dotfiles, not editor or backup files (see
// IsManifestName). Symlinks are followed; the target's ownership and mode are
// checked. The dir and every file must be owned by root and not group- or
// world-writable unless Config.AllowInsecure is set.
//
// The watcher is event-driven (fsnotify) with a periodic full relist as a
// safety net. Every debounced burst of events triggers a full relist (only
// changed files are decoded again); a Snapshot is emitted only when the
// desired set (UID + config hash) or the set of file errors changed, so each
// real change yields exactly one snapshot and no-op touches yield none.
//
// A file that fails to read or validate is reported in Snapshot.Errors and
// changes nothing else: pods it defined at its last good version stay in the
// snapshot and are listed in FileError.Kept. With Config.LastGood the last
// good version survives a restart of podhost: a file invalid at start keeps
// its pods too. A deleted file removes its pods.
// Two files declaring the same kind and namespace/name: the file the source
// saw first owns the object (with Config.LastGood that order is persisted,
// so a restart does not switch the owner); the other gets a FileError (a
// Duplicate) and its declaration is not used while the owner's is there. Pods in snapshots are shared between snapshots:
// treat them as read-only.
package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// Defaults for Config.
const (
	DefaultRelist   = 20 * time.Second
	DefaultDebounce = 25 * time.Millisecond
)

// Config configures a Source.
type Config struct {
	Dir           string
	Relist        time.Duration // full relist period; default DefaultRelist
	Debounce      time.Duration // quiet time after the last event; default DefaultDebounce
	AllowInsecure bool          // skip the ownership/mode checks (development)
	// LastGood, if set, persists each file's last good content across
	// restarts of podhost (see LastGood).
	LastGood LastGood
	Logger   *slog.Logger
}

// FileError is a problem with one manifest file (or, with File == the dir, a
// missing manifest dir).
type FileError struct {
	File string // path of the file
	Err  error  // one line per problem, each prefixed with the file's base name
	// Kept lists the full names (ns/name) of pods from this file that stay
	// in the snapshot at their last good version.
	Kept []string
}

// Error returns the underlying error text.
func (e FileError) Error() string { return e.Err.Error() }

// Snapshot is the desired set read from the manifest dir.
type Snapshot struct {
	Pods []*corev1.Pod // in the files' first-seen order, then document order
	// ConfigMaps and Secrets declared in the manifests (same order and
	// duplicate rule as Pods, per kind).
	ConfigMaps []*corev1.ConfigMap
	Secrets    []*corev1.Secret
	// Workloads are the Deployments, StatefulSets, ... declared (same
	// rule); their pods are in Pods.
	Workloads []*manifest.Workload
	// Services and ServiceAccounts declared in the manifests (services.go).
	Services        []*corev1.Service
	ServiceAccounts []*corev1.ServiceAccount
	// Ignored are the objects of kinds without effect (RBAC, the metrics
	// APIService: manifest.Ignored), kept for apply and delete.
	Ignored []*manifest.Ignored
	Errors  []FileError // sorted by File
	// Duplicates are the declarations refused because an earlier file
	// declares the same object (also in Errors, as their file's lines).
	Duplicates []*Duplicate
}

// Source watches a manifest dir.
type Source struct {
	cfg  Config
	log  *slog.Logger
	scan *scanner

	watching bool
	emitted  bool
	last     string // key of the last emitted snapshot
	onSync   func(emitted bool)
}

// New returns a Source for cfg, filling defaults.
func New(cfg Config) *Source {
	if cfg.Relist <= 0 {
		cfg.Relist = DefaultRelist
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = DefaultDebounce
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Source{
		cfg:  cfg,
		log:  cfg.Logger.With("component", "source", "dir", cfg.Dir),
		scan: newScanner(cfg.Dir, cfg.AllowInsecure),
	}
	s.scan.store, s.scan.log = cfg.LastGood, s.log
	return s
}

// Run watches the dir until ctx is done. It emits a snapshot after start and
// after each real change. It returns nil when ctx is done, and an error when
// the dir is refused (insecure ownership or mode) or the watcher fails.
func (s *Source) Run(ctx context.Context, out chan<- Snapshot) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("source: watcher: %w", err)
	}
	defer w.Close()
	landed := s.startLanded()
	defer landed.close()
	s.ensureWatch(w, landed)
	if err := s.sync(ctx, out); err != nil {
		return err
	}
	relist := time.NewTicker(s.cfg.Relist)
	defer relist.Stop()
	d := newDebouncer(s.cfg.Debounce, 10*s.cfg.Debounce)
	defer d.stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-landed.ready():
			d.now()
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("source: watcher closed")
			}
			s.onEvent(w, landed, ev)
			d.kick()
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("source: watcher closed")
			}
			s.log.Warn("watch error; relisting", "err", err)
			d.kick()
		case <-d.c():
			d.fired()
			err = s.sync(ctx, out)
		case <-relist.C:
			s.ensureWatch(w, landed)
			err = s.sync(ctx, out)
		}
		if err != nil {
			return err
		}
	}
}

func (s *Source) onEvent(w *fsnotify.Watcher, landed *landedWatch, ev fsnotify.Event) {
	if ev.Name == s.cfg.Dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		// The dir itself went away: its watch is gone (or follows the
		// moved dir). Re-added by the next relist.
		_ = w.Remove(s.cfg.Dir)
		landed.remove()
		s.watching = false
	}
}

func (s *Source) ensureWatch(w *fsnotify.Watcher, landed *landedWatch) {
	if s.watching {
		return
	}
	if err := w.Add(s.cfg.Dir); err != nil {
		s.log.Warn("cannot watch manifest dir; relying on relist", "err", err)
		return
	}
	s.watching = true
	if err := landed.add(s.cfg.Dir); err != nil {
		s.log.Debug("no landed-file hints; every change waits the debounce", "err", err)
	}
}

// startLanded starts the landed-file hints (landed.go); nil without them.
func (s *Source) startLanded() *landedWatch {
	lw, err := newLandedWatch()
	if err != nil {
		s.log.Debug("no landed-file hints; every change waits the debounce", "err", err)
		return nil
	}
	go lw.run()
	return lw
}

// sync relists and emits the snapshot if it changed. A refused dir is a
// fatal error; a missing dir is an empty set with an error; other dir read
// errors keep the last state.
func (s *Source) sync(ctx context.Context, out chan<- Snapshot) error {
	snap, err := s.scan.scan()
	switch {
	case err == nil:
	case errors.Is(err, ErrInsecure):
		return fmt.Errorf("source: refusing %w", err)
	case errors.Is(err, fs.ErrNotExist):
		snap = Snapshot{Errors: []FileError{{File: s.cfg.Dir, Err: err}}}
	default:
		s.log.Error("relist failed; keeping the last state", "err", err)
		s.notify(false)
		return nil
	}
	key := snap.key()
	if s.emitted && key == s.last {
		s.notify(false)
		return nil
	}
	select {
	case out <- snap:
	case <-ctx.Done():
		return nil
	}
	s.emitted, s.last = true, key
	s.log.Info("manifests changed", "pods", len(snap.Pods), "configMaps", len(snap.ConfigMaps), "secrets", len(snap.Secrets), "errors", len(snap.Errors))
	for _, fe := range snap.Errors {
		s.log.Warn("manifest error", "file", fe.File, "err", fe.Err, "kept", fe.Kept)
	}
	s.notify(true)
	return nil
}

func (s *Source) notify(emitted bool) {
	if s.onSync != nil {
		s.onSync(emitted)
	}
}

// key identifies what matters for change detection: pods by UID and config
// hash (order-independent) and the file errors.
func (s Snapshot) key() string {
	ids := make([]string, 0, len(s.Pods))
	for _, p := range s.Pods {
		ids = append(ids, string(p.UID)+" "+manifest.Hash(p))
	}
	ids = append(ids, s.dataKeys()...)
	ids = append(ids, s.serviceKeys()...)
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(id)
		b.WriteByte('\n')
	}
	for _, fe := range s.Errors {
		fmt.Fprintf(&b, "\x00%s\x00%s\x00%s", fe.File, fe.Err, strings.Join(fe.Kept, ","))
	}
	return b.String()
}

// debouncer fires quiet after the last kick, but at most maxWait after the
// first kick of a burst (so a constantly written dir still gets relisted).
type debouncer struct {
	quiet, maxWait time.Duration
	t              *time.Timer
	pending        bool
	start          time.Time
	lastHint       time.Time // the last now()
	immediate      bool      // now() asked to fire at once
}

func newDebouncer(quiet, maxWait time.Duration) *debouncer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &debouncer{quiet: quiet, maxWait: maxWait, t: t}
}

func (d *debouncer) kick() {
	now := time.Now()
	if !d.pending {
		d.pending, d.start = true, now
	}
	if d.immediate {
		return // a finished write asked for a read at once: events racing it do not postpone it
	}
	wait := d.quiet
	if left := d.maxWait - now.Sub(d.start); left < wait {
		wait = max(left, 0)
	}
	d.t.Reset(wait)
}

// now fires at once: a finished write was seen (landed.go). Only a hint
// that comes a quiet period after the previous one: the rest of a burst
// (cp *.yaml) is debounced as without hints.
func (d *debouncer) now() {
	now := time.Now()
	prev := d.lastHint
	d.lastHint = now
	if now.Sub(prev) < d.quiet {
		d.kick()
		return
	}
	if !d.pending {
		d.pending, d.start = true, now
	}
	d.immediate = true
	d.t.Reset(0)
}

func (d *debouncer) c() <-chan time.Time { return d.t.C }
func (d *debouncer) fired()              { d.pending, d.immediate = false, false }
func (d *debouncer) stop()               { d.t.Stop() }
