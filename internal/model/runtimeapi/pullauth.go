package runtimeapi

import "context"

type pullAuthKey struct{}

// WithPullAuth returns a ctx whose EnsureImage tries these docker
// config.json documents (the pod's imagePullSecrets of type
// kubernetes.io/dockerconfigjson, in order) for registry credentials
// before the runtime's own auth files. The documents are secret: never
// log or store them.
func WithPullAuth(ctx context.Context, configs [][]byte) context.Context {
	if len(configs) == 0 {
		return ctx
	}
	return context.WithValue(ctx, pullAuthKey{}, configs)
}

// PullAuth returns the documents of WithPullAuth.
func PullAuth(ctx context.Context) [][]byte {
	v, _ := ctx.Value(pullAuthKey{}).([][]byte)
	return v
}
