package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/containerd/v2/plugins"
	"github.com/containerd/errdefs"
	"github.com/moby/sys/signal"

	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// ContainerConfig describes a container to create (runtimeapi.ContainerConfig).
type ContainerConfig = runtimeapi.ContainerConfig

// CreateContainer creates the container and its rootfs snapshot (no task).
// Everything it makes is held by a podhost lease until the container record
// references it (leases.go): a create cut by a crash or a cancelled ctx
// leaves nothing that CollectGarbage does not remove.
func (r *Runtime) CreateContainer(ctx context.Context, cfg ContainerConfig) error {
	ctx = r.nsctx(ctx)
	if cfg.ID == "" || cfg.Labels[wellknown.LabelPodUID] == "" {
		return fmt.Errorf("create container %q: ID and label %s are required: %w",
			cfg.ID, wellknown.LabelPodUID, errdefs.ErrInvalidArgument)
	}
	r.inflight.Store(cfg.ID, true)
	defer r.inflight.Delete(cfg.ID)
	err := r.withLease(ctx, func(ctx context.Context) error { return r.createContainer(ctx, cfg) })
	if err != nil {
		return fmt.Errorf("create container %s: %w", cfg.ID, err)
	}
	return nil
}

func (r *Runtime) createContainer(ctx context.Context, cfg ContainerConfig) error {
	img, err := r.client.GetImage(ctx, cfg.Image.Ref)
	if err != nil {
		return fmt.Errorf("image %s: %w", cfg.Image.Ref, err)
	}
	if got := img.Target().Digest.String(); cfg.Image.Digest != "" && got != cfg.Image.Digest {
		// Another pull moved the tag since the spec was built for it (its
		// config, and the user resolved per digest): the next sync starts
		// over with the new image.
		return fmt.Errorf("image %s is now %s, not the %s the container was made for: %w",
			cfg.Image.Ref, got, cfg.Image.Digest, errdefs.ErrAborted)
	}
	sn := r.snapshotter(cfg.Snapshotter)
	cacheKey := img.Target().Digest.String() + "|" + sn
	if _, ok := r.images.Load(cacheKey); !ok {
		if err := r.unpack(ctx, img, sn); err != nil {
			return err
		}
	}
	group := cfg.Labels[wellknown.LabelSandboxID]
	if group == "" {
		group = cfg.Labels[wellknown.LabelPodUID]
	}
	snapOpts := []snapshots.Opt{snapshots.WithLabels(map[string]string{wellknown.LabelSnapshotContainer: cfg.ID})}
	if len(cfg.UserNS) > 0 {
		snapOpts = append(snapOpts, client.WithUserNSRemapperLabels(cfg.UserNS, cfg.UserNS))
	}
	opts := []client.NewContainerOpts{
		client.WithImage(img),
		client.WithSnapshotter(sn),
		client.WithNewSnapshot(cfg.ID, img, snapOpts...),
	}
	if cfg.SystemdCgroup {
		opts = append(opts, client.WithRuntime(plugins.RuntimeRuncV2, &options.Options{SystemdCgroup: true}))
	}
	labels := r.containerLabels(cfg)
	specOpts := append(slices.Clone(cfg.SpecOpts), withDefaultAnnotation(ShimGroupAnnotation, group), labelsFromSpec(labels))
	opts = append(opts, client.WithNewSpec(specOpts...), client.WithContainerLabels(labels))
	// No check for a snapshot left under this ID: IDs are new for every
	// create, and a failed create removes its snapshot below (or the
	// housekeeping's CollectGarbage does).
	if _, err := r.client.NewContainer(ctx, cfg.ID, opts...); err != nil {
		r.images.Delete(cacheKey) // the snapshot may be gone: check again next time
		// The snapshot may exist without a container: remove it now rather
		// than wait for the lease (best effort; CollectGarbage retries).
		r.removeUnownedSnapshot(context.WithoutCancel(ctx), sn, cfg.ID)
		return err
	}
	r.touchImage(ctx, img)
	return nil
}

func (r *Runtime) containerLabels(cfg ContainerConfig) map[string]string {
	l := make(map[string]string, len(cfg.Labels)+3)
	for k, v := range cfg.Labels {
		l[k] = v
	}
	if _, set := l[wellknown.LabelStopSignal]; !set && cfg.Image.Config.StopSignal != "" {
		l[wellknown.LabelStopSignal] = cfg.Image.Config.StopSignal // the pod's lifecycle.stopSignal wins
	}
	if cfg.LogPath != "" {
		l[wellknown.LabelLogPath] = cfg.LogPath
	}
	if cfg.Image.Digest != "" {
		l[wellknown.LabelImageDigest] = cfg.Image.Digest
	}
	return l
}

// removeUnownedSnapshot removes snapshot id unless a container id exists
// (a create that failed on the client's side may have succeeded).
func (r *Runtime) removeUnownedSnapshot(ctx context.Context, sn, id string) {
	if _, err := r.client.LoadContainer(ctx, id); !errdefs.IsNotFound(err) {
		return
	}
	if err := r.client.SnapshotService(sn).Remove(ctx, id); err != nil && !errdefs.IsNotFound(err) {
		r.log().Debug("remove snapshot of failed create", "id", id, "err", err)
	}
}

// labelsFromSpec copies what StartContainer needs from the finished spec
// into labels: the shim group (wellknown.LabelShimGroup, for the per-group
// lock) and whether the process has a terminal (wellknown.LabelTerminal).
func labelsFromSpec(labels map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if g := s.Annotations[ShimGroupAnnotation]; g != "" {
			labels[wellknown.LabelShimGroup] = g
		}
		if s.Process != nil && s.Process.Terminal {
			labels[wellknown.LabelTerminal] = "true"
		}
		return nil
	}
}

// withDefaultAnnotation sets an OCI annotation unless already set.
func withDefaultAnnotation(key, value string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if value == "" {
			return nil
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		if _, ok := s.Annotations[key]; !ok {
			s.Annotations[key] = value
		}
		return nil
	}
}

// StartContainer creates the task with the log driver as its IO and starts
// it, then records wellknown.LabelStartedAt. There is no in-process Wait: exits are
// observed through Events and task status (the shim keeps the exit status
// until the task is deleted, which podhost does only once it recorded the
// exit in labels: reap.go), so they survive podhost restarts. A container
// that ran (its exit recorded) is not started again.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.nsctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if code, ran := info.Labels[wellknown.LabelExitCode]; ran {
		return fmt.Errorf("start container %s: it ran already (exit code %s): %w", id, code, errdefs.ErrFailedPrecondition)
	}
	task, err := r.createTask(ctx, c, info.Labels)
	if err != nil {
		return fmt.Errorf("start container %s: create task: %w", id, err)
	}
	started := time.Now()
	if err := task.Start(ctx); err != nil {
		dctx := context.WithoutCancel(ctx)
		if unlock, lerr := r.reapLocks.lock(dctx, id); lerr == nil { // not beside the reap of its exit
			if _, derr := task.Delete(dctx, client.WithProcessKill); derr != nil && !errdefs.IsNotFound(derr) {
				r.log().Warn("delete task after failed start", "container", id, "err", derr)
			}
			unlock()
		}
		return fmt.Errorf("start container %s: %w", id, err)
	}
	if _, err := c.SetLabels(ctx, map[string]string{wellknown.LabelStartedAt: started.UTC().Format(time.RFC3339Nano)}); err != nil {
		r.log().Warn("record start time", "container", id, "err", err)
	}
	return nil
}

// createTask creates c's task, one at a time in its shim group (see
// groupLocks). A task there already (one left in state created by a
// podhost killed between NewTask and Start) is an error, AlreadyExists:
// the syncer never starts a container twice, it removes one it finds
// created and starts a new container (TestRobustTaskLeftCreated); killing
// that task here would publish a TaskExit whose reap would record exit
// 137 on the container being started.
func (r *Runtime) createTask(ctx context.Context, c client.Container, labels map[string]string) (client.Task, error) {
	unlock, err := r.groupCreates.lock(ctx, labels[wellknown.LabelShimGroup])
	if err != nil {
		return nil, err
	}
	defer unlock()
	ioc := r.logIO(labels[wellknown.LabelLogPath], labels[wellknown.LabelTerminal] == "true")
	if labels[wellknown.LabelStdin] == "true" {
		ioc = withStdin(ioc, labels[wellknown.LabelLogPath], labels[wellknown.LabelTerminal] == "true")
	}
	task, err := r.newTask(ctx, c, ioc)
	if errors.Is(err, errTaskCreateTimeout) {
		// Still holding the group's lock: the next create of the group
		// starts once the wedged shim is dead.
		r.killWedgedShim(ctx, labels[wellknown.LabelShimGroup], c.ID())
	}
	return task, err
}

// shimClosed is ttrpc.ErrClosed's text, as it reaches podhost through
// containerd's API when NewTask met a shim that was shutting down.
const shimClosed = "ttrpc: closed"

// shimClosedAttempts bounds newTask's attempts.
const shimClosedAttempts = 5

// errTaskCreateTimeout: one attempt of newTask ran out of the
// runtimeRequestTimeout (not the caller's ctx). A shim serialises the
// creates of its tasks, so a create stuck in a shim (in runc create, or
// waiting for the log driver) holds every later create of its group:
// createTask then kills the group's shim (killWedgedShim).
var errTaskCreateTimeout = errors.New("task create timed out: the shim did not answer within runtimeRequestTimeout")

// newTask creates c's task. Containers of several pods share a shim
// (internal/host/shimgroup): when the last task of a group was just deleted its
// shim shuts down, and a NewTask in that group can reach it in between
// (containerd finds the socket, the shim closes the connection: "failed
// to create shim task: ttrpc: closed"). The next attempt, a moment later,
// starts a new shim for the group.
func (r *Runtime) newTask(ctx context.Context, c client.Container, ioc cio.Creator) (client.Task, error) {
	delay := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		tctx, cancel := context.WithTimeout(ctx, r.taskCreateTimeout())
		task, err := c.NewTask(tctx, ioc)
		timedOut := err != nil && errors.Is(tctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if timedOut {
			return nil, fmt.Errorf("%w (%s): %w", errTaskCreateTimeout, r.taskCreateTimeout(), err)
		}
		if err == nil || attempt == shimClosedAttempts || !isShimClosed(err) {
			return task, err
		}
		r.log().Info("the container's shim was shutting down; creating the task again",
			"container", c.ID(), "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// isShimClosed: NewTask met its group's shim going away — the connection
// closed under it, or the shim's socket still there but no longer
// accepting ("failed to start shim: ... connect: connection refused",
// seen under load: the socket outlives the shim's listener by a moment).
func isShimClosed(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, shimClosed) || strings.Contains(msg, "shim") && strings.Contains(msg, "connection refused")
}

// logIO is the task's IO: the log driver on stdout and stderr, or, for a
// container with a terminal (tty), on the console, which the shim copies
// to the driver's stdout (its CopyConsole), as containerd's CRI logs a tty
// container's output as stdout. A terminal needs the driver: the shim's
// console copy has nowhere else to write.
func (r *Runtime) logIO(path string, terminal bool) cio.Creator {
	args := logs.DriverArgs(logs.DriverConfig{Path: path, MaxSize: r.LogMaxSize, MaxFiles: r.LogMaxFiles})
	switch {
	case path != "" && terminal:
		return cio.TerminalBinaryIO(r.LogDriver, args)
	case path != "":
		return cio.BinaryIO(r.LogDriver, args)
	case terminal:
		return func(string) (cio.IO, error) {
			return nil, errors.New("a container with a terminal (tty) needs a log path")
		}
	}
	return cio.NullIO
}

// StopContainer sends the stop signal (wellknown.LabelStopSignal: the pod's
// lifecycle.stopSignal, else the image's STOPSIGNAL; else SIGTERM), waits
// up to grace for the task to exit, then SIGKILLs every process of the
// container and waits for the exit (bounded by ctx). A missing container or
// task, or one already stopped, is success.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.nsctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited, err := task.Wait(wctx)
	if err != nil {
		return fmt.Errorf("stop container %s: wait: %w", id, err)
	}
	if st, err := task.Status(ctx); err == nil && st.Status == client.Stopped {
		return nil
	}
	if grace > 0 {
		info, _ := c.Info(ctx, client.WithoutRefreshedMetadata)
		sig := r.stopSignal(info.Labels[wellknown.LabelStopSignal])
		if err := task.Kill(ctx, sig); err != nil && !ignorableKillErr(err) {
			return fmt.Errorf("stop container %s: signal %v: %w", id, sig, err)
		}
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-exited:
			return nil
		case <-timer.C:
			r.log().Info("grace period over, killing", "container", id, "grace", grace)
		case <-ctx.Done():
			return fmt.Errorf("stop container %s: %w", id, ctx.Err())
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !ignorableKillErr(err) {
		return fmt.Errorf("stop container %s: SIGKILL: %w", id, err)
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop container %s: waiting after SIGKILL: %w", id, ctx.Err())
	}
}

func (r *Runtime) stopSignal(label string) syscall.Signal {
	if label == "" {
		return syscall.SIGTERM
	}
	sig, err := signal.ParseSignal(label)
	if err != nil {
		r.log().Warn("bad stop signal, using SIGTERM", "signal", label, "err", err)
		return syscall.SIGTERM
	}
	return sig
}

// ignorableKillErr: the process is gone already.
func ignorableKillErr(err error) bool {
	return errdefs.IsNotFound(err) || errdefs.IsFailedPrecondition(err)
}

// RemoveContainer kills and deletes the task, then deletes the container
// and its snapshot. Missing pieces are fine: it is idempotent.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.nsctx(ctx)
	defer r.forgetOOM(id)
	defer r.forgetTerminationMessage(id)
	defer r.forgetExit(id)
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	labels, err := c.Labels(ctx)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	unlock, err := r.reapLocks.lock(ctx, id) // not beside a reap's delete of the task
	if err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	err = r.deleteTask(ctx, c)
	unlock()
	if err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	// The instance's termination-log file goes with it (the rest of the
	// pod's directory goes with the pod).
	if p := labels[wellknown.LabelTerminationLog]; p != "" {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log().Debug("remove termination log", "container", id, "err", err)
		}
	}
	return nil
}

// taskKillWait bounds the wait for a SIGKILLed task's exit before deleting
// it: a task that never started (state created) must not hold a removal
// (and so its pod's worker) for ever.
const taskKillWait = 10 * time.Second

// deleteTask kills (SIGKILL, every process) and deletes c's task, if any.
// With no task (an exited one was reaped) containerd is still asked to
// delete it, as CRI does: that drops the record of a task whose shim
// deleted it in a delete cut short, and shuts that shim down.
func (r *Runtime) deleteTask(ctx context.Context, c client.Container) error {
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		if err := r.reaper.deleteTask(ctx, c.ID()); err != nil {
			return fmt.Errorf("delete task record: %w", err)
		}
		return nil
	} else if err != nil {
		return fmt.Errorf("load task: %w", err)
	}
	kctx, cancel := context.WithTimeout(ctx, taskKillWait)
	defer cancel()
	if err := client.WithProcessKill(kctx, task); err != nil && !errdefs.IsNotFound(err) {
		r.log().Warn("kill task before delete", "container", c.ID(), "err", err)
	}
	if _, err := task.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete task: %w", err) // not stopped yet: the caller retries
	}
	return nil
}
