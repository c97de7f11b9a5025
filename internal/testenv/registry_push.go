//go:build integration

package testenv

import (
	"context"
	"errors"
	"testing"

	"github.com/containerd/errdefs"
)

// PushedRegistry starts a registry for tb (stopped when tb ends, its log
// shown if tb failed) and pushes the test image (already imported into the
// Env's namespace) to it as repo ("podhost/busybox:1"). The pushed image is
// removed from the Env's containerd at the end. It returns the registry
// and the image's remote ref.
func (e *Env) PushedRegistry(tb testing.TB, ctx context.Context, opts RegistryOptions, repo string) (*Registry, string) {
	tb.Helper()
	reg, err := StartRegistry(ctx, tb.TempDir(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("registry log %s:\n%s", reg.Log, reg.LogTail(30))
		}
		if err := reg.Close(); err != nil {
			tb.Error(err)
		}
	})
	ref := reg.Ref(repo)
	tb.Cleanup(func() {
		err := e.Client().ImageService().Delete(e.Context(context.Background()), ref)
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			tb.Errorf("delete image %s: %v", ref, err)
		}
	})
	if err := PushImage(e.Context(ctx), e.Client(), e.ImageRef, ref, reg.Creds); err != nil {
		tb.Fatal(err)
	}
	return reg, ref
}
