package runtime

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// unknownExitCode is reported for a container whose task vanished (host
// reboot): like CRI, exit code 255 with reason "Unknown".
const unknownExitCode = 255

// ListPods returns every container carrying wellknown.LabelPodUID, grouped
// by pod, with its task state (one List call for containers, one for
// tasks). Pods are sorted by namespace/name/UID, containers by creation.
func (r *Runtime) ListPods(ctx context.Context) ([]*podstate.Pod, error) {
	ctx = r.nsctx(ctx)
	cs, err := r.client.ContainerService().List(ctx, fmt.Sprintf("labels.%q", wellknown.LabelPodUID))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	resp, err := r.client.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", errgrpc.ToNative(err))
	}
	procs := make(map[string]*task.Process, len(resp.Tasks))
	for _, p := range resp.Tasks {
		procs[p.ID] = p
	}
	byUID := map[types.UID]*podstate.Pod{}
	var pods []*podstate.Pod
	for _, c := range cs {
		pc := r.toContainer(ctx, c, procs[c.ID], false)
		uid := types.UID(c.Labels[wellknown.LabelPodUID])
		pod := byUID[uid]
		if pod == nil {
			pod = &podstate.Pod{UID: uid, Name: c.Labels[wellknown.LabelPodName], Namespace: c.Labels[wellknown.LabelPodNamespace]}
			byUID[uid] = pod
			pods = append(pods, pod)
		}
		pod.Containers = append(pod.Containers, pc)
	}
	for _, p := range pods {
		sort.SliceStable(p.Containers, func(i, j int) bool { return p.Containers[i].CreatedAt.Before(p.Containers[j].CreatedAt) })
	}
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
	return pods, nil
}

// ListPod returns the containers of one pod (filtered by its UID label,
// one task Get per container), never nil: a pod with nothing in the runtime
// has no containers. containerd reads every container of the namespace to
// filter them: the pod cache calls it only for a pod it knows nothing of.
func (r *Runtime) ListPod(ctx context.Context, uid types.UID) (*podstate.Pod, error) {
	ctx = r.nsctx(ctx)
	cs, err := r.client.ContainerService().List(ctx, fmt.Sprintf("labels.%q==%s", wellknown.LabelPodUID, strconv.Quote(string(uid))))
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	return r.podOf(ctx, uid, cs)
}

// PodContainers returns the containers ids of pod uid (one container and
// one task Get each), never nil; an id that does not exist, or carries
// another pod's UID, is left out. Its cost does not depend on the number of
// containers in the namespace.
func (r *Runtime) PodContainers(ctx context.Context, uid types.UID, ids []string) (*podstate.Pod, error) {
	ctx = r.nsctx(ctx)
	cs := make([]containers.Container, 0, len(ids))
	for _, id := range ids {
		c, err := r.client.ContainerService().Get(ctx, id)
		switch {
		case errdefs.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("get container %s of pod %s: %w", id, uid, err)
		case c.Labels[wellknown.LabelPodUID] != string(uid):
			continue
		}
		cs = append(cs, c)
	}
	return r.podOf(ctx, uid, cs)
}

// podOf builds pod uid from its containers cs, with their tasks.
func (r *Runtime) podOf(ctx context.Context, uid types.UID, cs []containers.Container) (*podstate.Pod, error) {
	pod := &podstate.Pod{UID: uid}
	for _, c := range cs {
		var proc *task.Process
		resp, err := r.client.TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: c.ID})
		switch {
		case err == nil:
			proc = resp.Process
		case !errdefs.IsNotFound(errgrpc.ToNative(err)):
			return nil, fmt.Errorf("get task %s: %w", c.ID, errgrpc.ToNative(err))
		}
		pod.Name, pod.Namespace = c.Labels[wellknown.LabelPodName], c.Labels[wellknown.LabelPodNamespace]
		pod.Containers = append(pod.Containers, r.toContainer(ctx, c, proc, true))
	}
	sort.SliceStable(pod.Containers, func(i, j int) bool { return pod.Containers[i].CreatedAt.Before(pod.Containers[j].CreatedAt) })
	return pod, nil
}

// ContainerPodUID returns the pod UID label of container id (the PLEG asks
// for containers it has not seen yet, instead of relisting everything).
func (r *Runtime) ContainerPodUID(ctx context.Context, id string) (types.UID, error) {
	c, err := r.client.ContainerService().Get(r.nsctx(ctx), id)
	if err != nil {
		return "", fmt.Errorf("get container %s: %w", id, err)
	}
	return types.UID(c.Labels[wellknown.LabelPodUID]), nil
}

// toContainer is c's state, with p its task (nil: none listed). A stopped
// task is reaped (reapTask): with wait (a pod's read) the state is
// returned once the reap did, so the log of an exited container is
// complete; without (a list of every pod) at once, the reap running in
// the background.
func (r *Runtime) toContainer(ctx context.Context, c containers.Container, p *task.Process, wait bool) *podstate.Container {
	l := c.Labels
	pc := &podstate.Container{
		ID:           c.ID,
		Name:         l[wellknown.LabelContainerName],
		Init:         l[wellknown.LabelInit] == "true",
		Image:        c.Image,
		ImageRef:     l[wellknown.LabelImageDigest],
		Hash:         l[wellknown.LabelSpecHash],
		SandboxID:    l[wellknown.LabelSandboxID],
		RestartCount: atoi(l[wellknown.LabelRestartCount]),
		Attempt:      atoi(l[wellknown.LabelAttempt]),
		CreatedAt:    c.CreatedAt,
		Labels:       l,
	}
	if t, err := time.Parse(time.RFC3339Nano, l[wellknown.LabelStartedAt]); err == nil {
		pc.StartedAt = t
	}
	var final bool // the state can change no more: the task is gone
	if p == nil {
		final = r.noTaskState(ctx, pc)
	} else {
		final = r.taskState(ctx, c, p, pc, wait)
	}
	if pc.State == podstate.StateExited {
		if msg := r.terminationMessage(ctx, pc, final); msg != "" {
			if pc.Message != "" {
				pc.Message += ": "
			}
			pc.Message += msg
		}
	}
	return pc
}

// taskState fills pc from the container's task; a stopped one is reaped
// (reap.go; see toContainer for wait). It reports whether the task is
// gone. containerd answers UNKNOWN for a task whose shim did not answer
// within 2 s, as while the shim deletes it (its delete holds the process
// during runc delete, the log driver's exit and the rootfs unmount): an
// exit recorded or seen by this process is reported then, not Unknown
// (the syncer would take the container for one never started and run it
// again).
func (r *Runtime) taskState(ctx context.Context, c containers.Container, p *task.Process, pc *podstate.Container, wait bool) bool {
	l := c.Labels
	pc.PID = p.Pid
	switch p.Status {
	case task.Status_CREATED:
		pc.State = podstate.StateCreated
	case task.Status_RUNNING, task.Status_PAUSED, task.Status_PAUSING:
		pc.State = podstate.StateRunning
		if pc.StartedAt.IsZero() {
			pc.StartedAt = c.CreatedAt // podhost died between Start and the label
		}
	case task.Status_STOPPED:
		pc.State, pc.PID = podstate.StateExited, 0
		pc.ExitCode = int32(p.ExitStatus)
		if p.ExitedAt != nil {
			pc.FinishedAt = p.ExitedAt.AsTime()
		}
		oom := l[wellknown.LabelOOM] == "true" || r.sawOOM(c.ID)
		pc.Reason = exitReason(pc.ExitCode, oom)
		return r.reapTask(ctx, c.ID, exitRecord{Code: pc.ExitCode, At: pc.FinishedAt, OOM: oom}, wait)
	default:
		if r.knownExit(ctx, pc, true) {
			return r.reapTask(ctx, c.ID, exitRecord{Code: pc.ExitCode, At: pc.FinishedAt, OOM: pc.Reason == "OOMKilled"}, wait)
		}
		pc.State = podstate.StateUnknown
	}
	return false
}

// noTaskState: the container's exit recorded in its labels (its task was
// reaped, or lost to a host reboot) or seen by this process (its task is
// being reaped; containerd removed the task of a killed shim and published
// its exit), never started (Created), or started and its task gone with
// nothing recorded (host reboot, interrupted removal): Exited with exit
// code 255 "Unknown". A task missing from the list only because its shim
// did not answer is reported as StateUnknown. It reports whether the
// state is final: no task, and none coming.
func (r *Runtime) noTaskState(ctx context.Context, pc *podstate.Container) bool {
	if r.exitFromLabels(pc, pc.Labels) {
		return true
	}
	if r.exitFromMemory(pc) {
		return false // the reap of the TaskExit may not have deleted the task yet
	}
	if !pc.StartedAt.IsZero() {
		_, err := r.client.TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: pc.ID})
		if err == nil || !errdefs.IsNotFound(errgrpc.ToNative(err)) {
			if r.knownExit(ctx, pc, false) {
				return false
			}
			pc.State = podstate.StateUnknown // err == nil: the task appeared after the list; the next look sees it
			if err != nil {
				pc.Message = err.Error()
			}
			return false
		}
	}
	// The task may have been reaped after pc's labels were read: its exit
	// was seen, or recorded before it went.
	if r.knownExit(ctx, pc, false) {
		return true
	}
	if pc.StartedAt.IsZero() {
		pc.State = podstate.StateCreated
		return true
	}
	pc.State, pc.ExitCode, pc.Reason = podstate.StateExited, unknownExitCode, "Unknown"
	pc.Message = "the container's task is gone (host reboot?)"
	return true
}

// knownExit fills pc from the exit recorded in its labels (with
// labelsFirst, the labels pc has; else those read again) or seen by this
// process, if any, and reports whether there was one.
func (r *Runtime) knownExit(ctx context.Context, pc *podstate.Container, labelsFirst bool) bool {
	if labelsFirst && r.exitFromLabels(pc, pc.Labels) {
		return true
	}
	if r.exitFromMemory(pc) {
		return true
	}
	l, err := r.reaper.labels(ctx, pc.ID)
	return err == nil && r.exitFromLabels(pc, l)
}

// exitFromMemory fills pc from the exit this process saw (noteExit), if
// any, and reports whether there was one.
func (r *Runtime) exitFromMemory(pc *podstate.Container) bool {
	ex, ok := r.exitSeen(pc.ID)
	if !ok {
		return false
	}
	pc.State, pc.PID, pc.ExitCode = podstate.StateExited, 0, ex.Code
	pc.FinishedAt = ex.At
	pc.Reason = exitReason(pc.ExitCode, ex.OOM || pc.Labels[wellknown.LabelOOM] == "true" || r.sawOOM(pc.ID))
	return true
}

// exitFromLabels fills pc (with labels, the container's) from the exit
// recorded in labels, if any, and reports whether there was one.
func (r *Runtime) exitFromLabels(pc *podstate.Container, labels map[string]string) bool {
	code, err := strconv.Atoi(labels[wellknown.LabelExitCode])
	if err != nil {
		return false
	}
	pc.Labels = labels
	pc.State, pc.PID, pc.ExitCode = podstate.StateExited, 0, int32(code)
	pc.FinishedAt, _ = time.Parse(time.RFC3339Nano, labels[wellknown.LabelFinishedAt])
	if t, err := time.Parse(time.RFC3339Nano, labels[wellknown.LabelStartedAt]); err == nil {
		pc.StartedAt = t
	}
	pc.Reason = exitReason(pc.ExitCode, labels[wellknown.LabelOOM] == "true" || r.sawOOM(pc.ID))
	return true
}

func exitReason(code int32, oom bool) string {
	switch {
	case oom:
		return "OOMKilled"
	case code == 0:
		return "Completed"
	default:
		return "Error"
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
