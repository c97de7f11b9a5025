package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/model/wellknown"
)

// EventRecorder records a pod event (status.Manager.Event).
type EventRecorder func(uid types.UID, typ, reason, message string)

// SetEventRecorder sets where the runtime records the pod events of its
// own actions (a wedged shim killed); nil records none.
func (r *Runtime) SetEventRecorder(f EventRecorder) {
	if f == nil {
		r.recorder.Store(nil)
		return
	}
	r.recorder.Store(&f)
}

// ReasonShimKilled is the event reason of a pod whose shim podhost killed
// because a task create in it timed out.
const ReasonShimKilled = "ShimKilled"

// listTimeout bounds the container list of killWedgedShim: metadata only,
// answered by containerd without the shim.
const listTimeout = 30 * time.Second

// killWedgedShim kills the shim of group after a task create in it ran
// out of its deadline (containerID's). The shim serialises its creates,
// and podhost serialises a group's creates (groupLocks), so a create stuck
// in the shim holds every later create of the group, and a retry would
// queue behind the same shim for ever. The shim is found from the host
// (procShims: the group's containers from containerd's metadata, their
// runc state, /proc), never through the shim or the task API, which would
// hang as the create did. Once it is dead containerd cleans it up, the
// group's tasks exit, the pod workers restart them per restartPolicy, and
// the next create of the group starts a fresh shim.
func (r *Runtime) killWedgedShim(ctx context.Context, group, containerID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listTimeout)
	defer cancel()
	log := r.log().With("group", group, "container", containerID, "timeout", r.taskCreateTimeout())
	if group == "" {
		log.Error("task create timed out; the container has no shim group, no shim to kill")
		return
	}
	cs, err := r.client.ContainerService().List(ctx, fmt.Sprintf("labels.%q==%q", wellknown.LabelShimGroup, group))
	if err != nil {
		log.Error("task create timed out in a wedged shim; listing its group to find the shim failed", "err", err)
		return
	}
	ids := []string{containerID}
	pods := map[types.UID]bool{}
	for _, c := range cs {
		if c.ID != containerID {
			ids = append(ids, c.ID)
		}
		if uid := c.Labels[wellknown.LabelPodUID]; uid != "" {
			pods[types.UID(uid)] = true
		}
	}
	pids, misses := r.shims.find(ids)
	if len(pids) == 0 {
		log.Error("task create timed out in a wedged shim, which was not found; not killing anything",
			"err", errors.Join(misses...))
		return
	}
	for _, pid := range pids {
		if err := r.killShim(pid); err != nil {
			log.Error("task create timed out in a wedged shim; killing it failed", "shim_pid", pid, "err", err)
			continue
		}
		log.Error("task create timed out: killed the group's wedged shim (SIGKILL); its containers restart in a new one", "shim_pid", pid)
		r.recordShimKilled(pods, group, pid)
	}
}

// killShim SIGKILLs pid through a pidfd, after checking again through
// that pidfd's process that it is this namespace's shim: a PID reused
// since find is never signalled.
func (r *Runtime) killShim(pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	if !r.shims.isShim(pid) {
		return fmt.Errorf("process %d is no longer %s of namespace %s", pid, shimBinary, r.ns)
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		return fmt.Errorf("pidfd_send_signal %d: %w", pid, err)
	}
	return nil
}

func (r *Runtime) recordShimKilled(pods map[types.UID]bool, group string, pid int) {
	rec := r.recorder.Load()
	if rec == nil {
		return
	}
	msg := fmt.Sprintf("A container start in shim group %s did not finish within runtimeRequestTimeout %s: podhost killed the group's wedged shim (PID %d); its containers restart in a new shim",
		group, r.taskCreateTimeout(), pid)
	for uid := range pods {
		(*rec)(uid, corev1.EventTypeWarning, ReasonShimKilled, msg)
	}
}

// taskCreateTimeout bounds one task create: Options.RuntimeRequestTimeout,
// default the kubelet's runtime-request-timeout.
func (r *Runtime) taskCreateTimeout() time.Duration {
	if r.RuntimeRequestTimeout > 0 {
		return r.RuntimeRequestTimeout
	}
	return DefaultRuntimeRequestTimeout
}

// recorderPtr holds the EventRecorder (SetEventRecorder).
type recorderPtr = atomic.Pointer[EventRecorder]
