package runtime

import (
	"context"
	"fmt"
	"slices"

	"github.com/containerd/containerd/v2/pkg/kernelversion"
	"github.com/containerd/containerd/v2/plugins"
	"github.com/opencontainers/runtime-spec/specs-go/features"
)

// RecursiveReadOnlyMounts reports whether containers can get recursively
// read-only bind mounts ("rro"), as containerd's CRI decides for a runtime
// handler (internal/cri/server introspectRuntimeHandler): the runc v2
// shim's runtime lists "rro" among its mount options (`runc features`,
// through containerd's introspection service) and the kernel has
// mount_setattr (Linux >= 5.12).
func (r *Runtime) RecursiveReadOnlyMounts(ctx context.Context) (bool, error) {
	info, err := r.client.RuntimeInfo(r.nsctx(ctx), plugins.RuntimeRuncV2, nil)
	if err != nil {
		return false, fmt.Errorf("features of runtime %s: %w", plugins.RuntimeRuncV2, err)
	}
	kernel, err := kernelversion.GreaterEqualThan(kernelversion.KernelVersion{Kernel: 5, Major: 12})
	if err != nil {
		return false, fmt.Errorf("kernel version: %w", err)
	}
	return supportsRecursiveReadOnly(info.Features, kernel), nil
}

// supportsRecursiveReadOnly: the runtime's features (a *features.Features
// for runc-compatible runtimes) list the "rro" mount option and the kernel
// is recent enough.
func supportsRecursiveReadOnly(f any, kernel bool) bool {
	feat, ok := f.(*features.Features)
	return ok && feat != nil && kernel && slices.Contains(feat.MountOptions, "rro")
}
