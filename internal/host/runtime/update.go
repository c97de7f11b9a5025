package runtime

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// UpdateContainerResources changes the cgroup limits of a running
// container in place (the shim's task update: runc update), then records
// labels on the container (the actuated resources), as CRI's
// UpdateContainerResources. Nothing is restarted.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, res *specs.LinuxResources, labels map[string]string) error {
	ctx = r.nsctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("update container %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("update container %s: load task: %w", id, err)
	}
	if err := task.Update(ctx, client.WithResources(res)); err != nil {
		return fmt.Errorf("update container %s: update task resources: %w", id, err)
	}
	if len(labels) > 0 {
		if _, err := c.SetLabels(ctx, labels); err != nil {
			return fmt.Errorf("update container %s: set labels: %w", id, err)
		}
	}
	return nil
}
