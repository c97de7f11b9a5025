package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Pull progress states of one blob.
const (
	PullWaiting     = "waiting"
	PullDownloading = "downloading"
	PullDone        = "done"
	PullExists      = "exists" // already in the content store
)

// BlobProgress is the state of one blob (manifest, config or layer) of a pull.
type BlobProgress struct {
	Digest, MediaType string
	Status            string
	Offset, Total     int64
}

// pollInterval is how often a pull's progress is read (as ctr's ShowProgress).
const pollInterval = 100 * time.Millisecond

// PullImage pulls ref and unpacks it, as ctr pull does: progress (when not
// nil) is called every 100 ms, and once at the end, with every blob seen
// so far, read from containerd's content store (active ingests and
// committed blobs).
func (r *Runtime) PullImage(ctx context.Context, ref string, progress func([]BlobProgress)) (Image, error) {
	ctx = r.nsctx(ctx)
	name, err := NormalizeRef(ref)
	if err != nil {
		return Image{}, err
	}
	t := &pullTracker{cs: r.client.ContentStore(), start: time.Now(), state: map[string]BlobProgress{}, expanded: map[string]bool{}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if progress != nil {
		wg.Add(1)
		go func() { defer wg.Done(); t.poll(ctx, done, progress) }()
	}
	var d Image
	err = r.withLease(ctx, func(ctx context.Context) error {
		img, err := r.client.Pull(ctx, name, client.WithPullUnpack, client.WithPullSnapshotter(r.snapshotter("")),
			client.WithResolver(r.resolver(ctx)), client.WithImageHandler(images.HandlerFunc(t.record)))
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrImagePull, name, err)
		}
		d, err = r.readyImage(ctx, img)
		return err
	})
	close(done)
	wg.Wait()
	return d, err
}

// pullTracker records the blobs of a pull and reads their progress.
type pullTracker struct {
	cs    content.Store
	start time.Time
	mu    sync.Mutex
	descs []ocispec.Descriptor
	state map[string]BlobProgress // by digest

	expanded map[string]bool // manifests whose layers were added (poll goroutine)
}

func (t *pullTracker) record(_ context.Context, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range t.descs {
		if d.Digest == desc.Digest {
			return nil, nil
		}
	}
	t.descs = append(t.descs, desc)
	return nil, nil
}

func (t *pullTracker) poll(ctx context.Context, done <-chan struct{}, progress func([]BlobProgress)) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-done:
			progress(t.snapshot(ctx, true))
			return
		case <-tick.C:
			progress(t.snapshot(ctx, false))
		}
	}
}

// snapshot reads the state of every recorded blob; final marks the ones
// still not committed as done (the pull returned).
func (t *pullTracker) snapshot(ctx context.Context, final bool) []BlobProgress {
	active := map[string]content.Status{}
	if sts, err := t.cs.ListStatuses(ctx, ""); err == nil {
		for _, st := range sts {
			active[st.Ref] = st
		}
	}
	var out []BlobProgress
	for i := 0; ; i++ { // expand may add descriptors while we go
		t.mu.Lock()
		if i >= len(t.descs) {
			t.mu.Unlock()
			return out
		}
		d := t.descs[i]
		t.mu.Unlock()
		p := BlobProgress{Digest: d.Digest.String(), MediaType: d.MediaType, Total: d.Size, Status: PullWaiting}
		prev := t.state[p.Digest]
		switch st, ok := active[remotes.MakeRefKey(ctx, d)]; {
		case ok:
			p.Status, p.Offset = PullDownloading, st.Offset
		case prev.Status == PullDone || prev.Status == PullExists:
			p = prev
		default:
			info, err := t.cs.Info(ctx, d.Digest)
			switch {
			case err == nil && info.CreatedAt.After(t.start):
				p.Status, p.Offset = PullDone, info.Size
			case err == nil:
				p.Status, p.Offset = PullExists, info.Size
			case !errdefs.IsNotFound(err) || final:
				p.Status = PullDone
			}
		}
		t.state[p.Digest] = p
		out = append(out, p)
		if p.Status == PullDone || p.Status == PullExists {
			t.expand(ctx, d)
		}
	}
}

// expand records the config and layers of a manifest once it is in the
// content store: with unpacking, containerd fetches layers inside the
// unpacker, past the image handlers, so they are never recorded otherwise.
func (t *pullTracker) expand(ctx context.Context, d ocispec.Descriptor) {
	if !images.IsManifestType(d.MediaType) || t.expanded[d.Digest.String()] {
		return
	}
	t.expanded[d.Digest.String()] = true
	children, err := images.Children(ctx, t.cs, d)
	if err != nil {
		return
	}
	for _, c := range children {
		_, _ = t.record(ctx, c)
	}
}
