package imagegc

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/runtimeapi"
)

type fakeRuntime struct {
	images  []runtimeapi.Image
	removed []string
}

func (f *fakeRuntime) ListImages(context.Context) ([]runtimeapi.Image, error) { return f.images, nil }
func (f *fakeRuntime) RemoveImage(_ context.Context, ref string) error {
	f.removed = append(f.removed, ref)
	return nil
}
func (f *fakeRuntime) ListPods(context.Context) ([]*podstate.Pod, error) { return nil, nil }

// Above the high threshold, image GC removes an image no manifest
// references and no container uses — but not before the manifests were
// read: until then "no manifest references it" is not known.
func TestGarbageCollectWaitsForTheManifests(t *testing.T) {
	rt := &fakeRuntime{images: []runtimeapi.Image{{Ref: "example.com/app:1", Digest: "sha256:aa", Size: 50, LastUsed: time.Now()}}}
	ready := false
	m := New(rt, Options{FSPath: "/images", Thresholds: Thresholds{High: 85, Low: 80}, Ready: func() bool { return ready },
		Logger: slog.New(slog.DiscardHandler), Statfs: func(string) (Usage, error) { return Usage{Capacity: 100, Available: 5}, nil }})
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rt.removed) != 0 {
		t.Fatalf("removed %v before the manifests were read", rt.removed)
	}
	ready = true
	if err := m.GarbageCollect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rt.removed) != 1 || rt.removed[0] != "example.com/app:1" {
		t.Fatalf("removed %v, want the unused image", rt.removed)
	}
}

// DeleteUnused removes every unused image below the thresholds too, and
// keeps those the manifests reference.
func TestDeleteUnused(t *testing.T) {
	rt := &fakeRuntime{images: []runtimeapi.Image{{Ref: "example.com/app:1", Digest: "sha256:aa", Size: 50, LastUsed: time.Now()},
		{Ref: "example.com/kept:1", Digest: "sha256:bb", Size: 50, LastUsed: time.Now()}}}
	m := New(rt, Options{FSPath: "/images", Thresholds: Thresholds{High: 85, Low: 80}, Referenced: func() []string { return []string{"example.com/kept:1"} },
		Logger: slog.New(slog.DiscardHandler), Statfs: func(string) (Usage, error) { return Usage{Capacity: 100, Available: 90}, nil }})
	if err := m.DeleteUnused(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rt.removed) != 1 || rt.removed[0] != "example.com/app:1" {
		t.Fatalf("removed %v, want the unused image only", rt.removed)
	}
}
