package imagegc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/distribution/reference"
	"golang.org/x/sys/unix"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// Runtime is what image GC needs of containerd (*runtime.Runtime).
type Runtime interface {
	ListImages(ctx context.Context) ([]runtimeapi.Image, error)
	RemoveImage(ctx context.Context, ref string) error
	ListPods(ctx context.Context) ([]*podstate.Pod, error)
}

// Options configure a Manager.
type Options struct {
	// FSPath is on the image filesystem (containerd's root).
	FSPath     string
	Thresholds Thresholds
	// Referenced returns the images the manifests reference (every pod
	// in the directory, admitted or not, running or not, and those of the
	// last good copies of the manifests).
	Referenced func() []string
	// Ready is false until the manifests were read (Referenced is empty
	// then, not because no pod wants an image): a pass is skipped. nil =
	// always ready.
	Ready  func() bool
	Logger *slog.Logger
	// Statfs measures FSPath (tests); nil = statfs(2).
	Statfs func(path string) (Usage, error)
}

// Manager runs image GC.
type Manager struct {
	rt   Runtime
	opts Options
}

// New returns a Manager.
func New(rt Runtime, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Statfs == nil {
		opts.Statfs = Statfs
	}
	if opts.Referenced == nil {
		opts.Referenced = func() []string { return nil }
	}
	if opts.Ready == nil {
		opts.Ready = func() bool { return true }
	}
	return &Manager{rt: rt, opts: opts}
}

// Run collects every period until ctx is done.
func (m *Manager) Run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := m.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
				m.opts.Logger.Warn("image GC", "err", err)
			}
		}
	}
}

// GarbageCollect removes unused images if the image filesystem is above
// the high threshold, until it is below the low one or nothing unused is
// left.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	u, err := m.opts.Statfs(m.opts.FSPath)
	if err != nil {
		return err
	}
	want := ToFree(u, m.opts.Thresholds)
	if want <= 0 {
		return nil
	}
	if !m.opts.Ready() {
		m.opts.Logger.Info("image filesystem above threshold; image GC waits until the manifests are read", "path", m.opts.FSPath, "usage", u.Percent())
		return nil
	}
	imgs, inUse, err := m.images(ctx)
	if err != nil {
		return err
	}
	refs := Plan(imgs, inUse, want)
	m.opts.Logger.Info("image filesystem above threshold: removing unused images", "path", m.opts.FSPath,
		"usage", u.Percent(), "high", m.opts.Thresholds.High, "low", m.opts.Thresholds.Low, "toFree", want, "images", refs)
	err = m.remove(ctx, refs)
	if after, err := m.opts.Statfs(m.opts.FSPath); err == nil && after.Percent() >= m.opts.Thresholds.High {
		m.opts.Logger.Warn("image filesystem still above threshold after image GC: nothing unused left",
			"path", m.opts.FSPath, "usage", after.Percent(), "high", m.opts.Thresholds.High)
	}
	return err
}

// images lists the images and what is in use.
func (m *Manager) images(ctx context.Context) ([]Image, func(Image) bool, error) {
	inUse, err := m.InUse(ctx)
	if err != nil {
		return nil, nil, err
	}
	imgs, err := m.rt.ListImages(ctx)
	if err != nil {
		return nil, nil, err
	}
	return toImages(imgs), inUse, nil
}

// remove removes the refs, every one tried.
func (m *Manager) remove(ctx context.Context, refs []string) error {
	var errs []error
	for _, ref := range refs {
		if err := m.rt.RemoveImage(ctx, ref); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DeleteUnused removes every image not in use, whatever the thresholds
// (the kubelet's DeleteUnusedImages: the eviction manager's node-level
// reclaim under disk pressure, before it evicts a pod). Nothing before
// the manifests were read.
func (m *Manager) DeleteUnused(ctx context.Context) error {
	if !m.opts.Ready() {
		return nil
	}
	imgs, inUse, err := m.images(ctx)
	if err != nil {
		return err
	}
	refs := Unused(imgs, inUse)
	if len(refs) > 0 {
		m.opts.Logger.Info("disk pressure: removing every unused image", "images", refs)
	}
	return m.remove(ctx, refs)
}

// InUse returns the predicate "a manifest references it, or a container
// was created from it".
func (m *Manager) InUse(ctx context.Context) (func(Image) bool, error) {
	pods, err := m.rt.ListPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("image GC: %w", err)
	}
	refs := m.opts.Referenced()
	for _, p := range pods {
		for _, c := range p.Containers {
			refs = append(refs, c.Image)
		}
	}
	return Matcher(refs), nil
}

// Matcher returns a predicate matching images named by one of refs
// (normalized: "busybox" matches docker.io/library/busybox:latest) or,
// for refs with a digest, by that digest.
func Matcher(refs []string) func(Image) bool {
	names, digests := map[string]bool{}, map[string]bool{}
	for _, r := range refs {
		names[r] = true
		if n, err := reference.ParseDockerRef(r); err == nil {
			names[n.String()] = true
		}
		if _, d, ok := strings.Cut(r, "@"); ok {
			digests[d] = true
		}
	}
	return func(img Image) bool { return names[img.Ref] || digests[img.Digest] }
}

func toImages(in []runtimeapi.Image) []Image {
	out := make([]Image, len(in))
	for i, img := range in {
		out[i] = Image{Ref: img.Ref, Digest: img.Digest, Size: img.Size, LastUsed: img.LastUsed, Pinned: img.Pinned}
	}
	return out
}

// FromRuntime converts the runtime's image list (`images prune`).
func FromRuntime(in []runtimeapi.Image) []Image { return toImages(in) }

// Statfs measures the filesystem holding path.
func Statfs(path string) (Usage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Usage{}, fmt.Errorf("image GC: statfs %s: %w", path, err)
	}
	bs := int64(st.Bsize)
	return Usage{Capacity: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs}, nil
}
