package runtimeapi

import "context"

type pullStartedKey struct{}

// WithPullStarted returns a ctx whose EnsureImage calls f just before it
// fetches the image from its registry (not when the image is present): the
// syncer's "Pulling" event. Hooks already in ctx still run, first.
func WithPullStarted(ctx context.Context, f func()) context.Context {
	prev, _ := ctx.Value(pullStartedKey{}).(func())
	return context.WithValue(ctx, pullStartedKey{}, func() {
		if prev != nil {
			prev()
		}
		f()
	})
}

// PullStarted runs the hooks of ctx (EnsureImage implementations call it).
func PullStarted(ctx context.Context) {
	if f, ok := ctx.Value(pullStartedKey{}).(func()); ok {
		f()
	}
}
