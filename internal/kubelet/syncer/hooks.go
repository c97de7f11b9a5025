package syncer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podhost/podhost/internal/kubelet/handler"
	"github.com/podhost/podhost/internal/kubelet/lifecycle"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// minStopGrace is what the stop signal always gets at least, whatever the
// grace period and whatever a preStop hook used of it: the kubelet's
// killContainer gives every container this "minimal shutdown window"
// (minimumGracePeriodInSeconds) before StopContainer, so a grace period of
// 0 still sends the stop signal and SIGKILLs only 2 s later.
const minStopGrace = 2 * time.Second

// maxLabelValue bounds the preStop label: containerd refuses a label
// whose key and value exceed 4096 bytes.
const maxLabelValue = 4000

// HookRunner runs a postStart or preStop hook (internal/kubelet/lifecycle.Runner).
type HookRunner interface {
	Run(ctx context.Context, t lifecycle.Target, h *corev1.LifecycleHandler) (string, error)
}

// preStopLabel is the container's preStop handler as compact JSON, its
// named httpGet port resolved: what stops the container when no pod spec
// is at hand (an orphan after a podhost restart) and what makes a stop run
// the hook of the version the container was created from. "" when there is
// no hook, or it does not fit in a label (the container is then stopped
// without it when its pod spec is gone; logged).
func (s *Syncer) preStopLabel(c *corev1.Container) string {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return ""
	}
	h := c.Lifecycle.PreStop.DeepCopy()
	if h.HTTPGet != nil && h.HTTPGet.Port.Type == intstr.String {
		if port, err := handler.ResolvePort(h.HTTPGet.Port, c); err == nil {
			h.HTTPGet.Port = intstr.FromInt(port)
		}
	}
	b, err := json.Marshal(h)
	if err != nil || len(b) > maxLabelValue {
		s.log.Warn("preStop hook too large for a container label: an orphaned container stops without it",
			"container", c.Name, "bytes", len(b))
		return ""
	}
	return string(b)
}

// preStopOf returns the preStop hook of container c and the spec to run it
// with: the one recorded at create time, else (containers made before
// podhost recorded it) the pod's.
func preStopOf(pod *corev1.Pod, c *podstate.Container) (*corev1.LifecycleHandler, *corev1.Container) {
	spec := &corev1.Container{Name: c.Name}
	if pod != nil {
		for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range list {
				if list[i].Name == c.Name {
					spec = &list[i]
				}
			}
		}
	}
	if v := c.Labels[wellknown.LabelPreStop]; v != "" {
		var h corev1.LifecycleHandler
		if err := json.Unmarshal([]byte(v), &h); err == nil {
			return &h, spec
		}
	}
	if spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
		return spec.Lifecycle.PreStop, spec
	}
	return nil, nil
}

// runPreStop runs container c's preStop hook, if any and grace is above 0,
// inside grace: the hook is cut off when grace runs out. It returns what
// is left of grace (0 or less: nothing); the caller gives the stop signal
// at least minStopGrace, on every stop (the kubelet's killContainer: with
// or without a hook, a grace of 0 included).
func (s *Syncer) runPreStop(ctx context.Context, pod *corev1.Pod, c *podstate.Container, grace time.Duration) time.Duration {
	h, spec := preStopOf(pod, c)
	if h == nil || grace <= 0 {
		return grace
	}
	uid := types.UID(c.Labels[wellknown.LabelPodUID])
	t := lifecycle.Target{ContainerID: c.ID, Container: spec, Host: s.hookHost(c),
		Pod: fmt.Sprintf("%s_%s(%s)", c.Labels[wellknown.LabelPodName], c.Labels[wellknown.LabelPodNamespace], uid)}
	log := s.log.With("podUID", string(uid), "container", c.Name, "id", c.ID)
	log.Debug("running preStop hook", "gracePeriod", grace)
	start := s.clock.Now()
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if msg, err := s.hooks.Run(hctx, t, h); err != nil && hctx.Err() == nil {
			log.Warn("preStop hook failed", "err", err, "message", msg)
			if uid != "" {
				// Without the handler's output, as the kubelet's
				// executePreStopHook: it may hold secrets.
				s.obs.Event(uid, corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
			}
		}
	}()
	select {
	case <-done:
	case <-s.clock.After(grace):
		log.Info("preStop hook not completed in grace period", "gracePeriod", grace)
	case <-ctx.Done():
	}
	return grace - s.clock.Since(start)
}

// hookHost is where an httpGet hook of container c goes: its sandbox's
// IP, or the host's for a hostNetwork pod (a sandbox without IPs).
func (s *Syncer) hookHost(c *podstate.Container) string {
	recs, _ := s.store.ListSandboxes()
	for _, r := range recs {
		if r.ID == c.SandboxID && len(r.IPs) > 0 {
			return r.IPs[0]
		}
	}
	if s.cfg.HostIP != "" {
		return s.cfg.HostIP
	}
	return "127.0.0.1"
}

// reasonPostStartHookError is the waiting reason of a container whose
// postStart hook failed (the kubelet's ErrPostStartHook).
const reasonPostStartHookError = "PostStartHookError"

// runPostStart runs container c's postStart hook right after its start; the
// caller starts nothing else of the pod until it returns. A failing hook
// gets a FailedPostStartHook event, its message the container's waiting
// message (reason PostStartHookError), and the container is killed (its
// preStop runs, as the kubelet's killContainer), then restarts per the
// restart policy. A hook cut short by the end of the sync (a kill
// request) is left to the termination.
func (s *Syncer) runPostStart(ctx context.Context, in startInput, c *corev1.Container, labels map[string]string, id string) (err error) {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	// The hook, and the kill after a failed one, may take minutes.
	in.slot.release()
	defer func() {
		if serr := in.slot.retake(ctx); err == nil {
			err = serr
		}
	}()
	pod := in.pod
	rc := &podstate.Container{ID: id, Name: c.Name, SandboxID: in.sandbox.ID, Labels: labels}
	t := lifecycle.Target{ContainerID: id, Container: c, Host: s.hookHost(rc),
		Pod: fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)}
	msg, err := s.hooks.Run(ctx, t, c.Lifecycle.PostStart)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("container %s: postStart hook: %w", c.Name, ctx.Err())
	}
	s.podLog(pod).Warn("postStart hook failed", "container", c.Name, "id", id, "err", err)
	// The event without the handler's output (it may hold secrets), which
	// goes to the waiting state's message only, as the kubelet's
	// startContainer.
	s.obs.Event(pod.UID, corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	if kerr := s.stopContainer(ctx, pod, rc, gracePeriod(pod, nil), "FailedPostStartHook"); kerr != nil {
		s.podLog(pod).Warn("kill container after its postStart hook failed", "container", c.Name, "err", kerr)
	}
	s.setWaiting(pod.UID, c.Name, reasonPostStartHookError, msg)
	return fmt.Errorf("container %s: %s: %w", c.Name, reasonPostStartHookError, err)
}
