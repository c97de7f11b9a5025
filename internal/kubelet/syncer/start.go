package syncer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/host/spec"
	"github.com/podhost/podhost/internal/host/volumes"
	"github.com/podhost/podhost/internal/kubelet/resize"
	"github.com/podhost/podhost/internal/kubelet/status"
	"github.com/podhost/podhost/internal/kubelet/userns"
	"github.com/podhost/podhost/internal/logs"
	"github.com/podhost/podhost/internal/model/podstate"
	"github.com/podhost/podhost/internal/model/qos"
	"github.com/podhost/podhost/internal/model/records"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// errBackoff marks a container waiting out a back-off: not a sync failure
// (SyncPod asks its worker for a sync when the back-off expires).
var errBackoff = errors.New("back-off")

type startInput struct {
	pod     *corev1.Pod
	running *podstate.Pod
	sandbox records.SandboxRecord
	cgroup  cgroups.PodCgroup
	volumes map[string]string
	// killed: the instances (ID by container name) this sync stopped for
	// a failed probe.
	killed  map[string]string
	requeue *requeue
	// slot: the sync's start slot (slots.go); nil when it creates no
	// sandbox.
	slot *slotHold
}

// startContainer creates and starts the next attempt of container c, unless
// it is in crash-loop or image-pull back-off. Failures are recorded as the
// container's waiting reason (what `get pods` shows) and returned.
func (s *Syncer) startContainer(ctx context.Context, in startInput, c *corev1.Container, init bool) error {
	pod := in.pod
	prev := in.running.Find(c.Name)
	restarts, attempt := 0, 0
	if prev != nil {
		attempt = prev.Attempt + 1
		restarts = prev.RestartCount
		if prev.State == podstate.StateExited {
			restarts++
			if basis := backoffBasis(in, prev); basis != nil && s.inCrashLoop(pod, c.Name, basis, in.requeue) {
				return nil
			}
		} else if err := s.removeContainer(ctx, prev.ID); err != nil { // created, never started
			return fmt.Errorf("remove stale container %s: %w", prev.ID, err)
		}
	}
	t0 := time.Now()
	img, err := s.ensureImage(ctx, pod, c, in.requeue, in.slot)
	if err != nil {
		return err
	}
	tImage := time.Since(t0)
	// The kubelet's makeMounts rewrites the hosts file (ensureHostsFile)
	// before every container start: a hostNetwork pod sees the host's
	// current /etc/hosts.
	if err := s.sb.WriteHosts(sandbox.Paths{Dir: in.sandbox.Dir}, pod, in.sandbox.IPs); err != nil {
		return s.failStart(pod, c.Name, "CreateContainerConfigError", err)
	}
	id := newID()
	termLog := s.terminationLog(pod, c, id)
	opts, err := spec.Build(s.specPod(in), spec.Container{
		Container: c, ID: id, Image: img.Config, ImageDigest: img.Digest, CgroupsPath: s.cg.ContainerPath(in.cgroup, id),
		QOS: qos.PodQOS(pod), MemoryCapacity: s.cfg.MemoryCapacity, TerminationLog: termLog,
	})
	if err != nil {
		return s.failStart(pod, c.Name, "CreateContainerConfigError", err)
	}
	systemd := s.cg.Driver() == cgroups.DriverSystemd
	if systemd {
		opts = append(opts, withScopeStopTimeout(gracePeriod(pod, nil)))
	}
	cfg := runtimeapi.ContainerConfig{
		ID: id, Image: img, SpecOpts: opts, SystemdCgroup: systemd,
		Labels:  s.labels(pod, in.sandbox.ID, c.Name, init, restarts, attempt),
		LogPath: logs.Path(s.cfg.LogDir, pod.Namespace, pod.Name, string(pod.UID), c.Name, restarts),
	}
	if uns := in.sandbox.UserNS; uns != nil {
		cfg.UserNS = spec.UserNSMappings(uns.HostID, uns.Size)
		cfg.Labels[wellknown.LabelUserNS] = userns.Label(*uns)
	}
	s.addStopLabels(cfg.Labels, c, termLog)
	cfg.Labels[wellknown.LabelResources] = resize.Label(c.Resources)
	if c.Stdin { // its console reads a FIFO attach writes (the decoder wants tty with it)
		cfg.Labels[wellknown.LabelStdin] = "true"
	}
	tSpec := time.Since(t0)
	s.cache.Track(pod.UID, id)
	if err := s.rt.CreateContainer(ctx, cfg); err != nil {
		return s.failStart(pod, c.Name, "CreateContainerError", err)
	}
	tCreate := time.Since(t0)
	s.obs.Event(pod.UID, corev1.EventTypeNormal, "Created", "Created container "+c.Name)
	if err := s.rt.StartContainer(ctx, id); err != nil {
		_ = s.removeContainer(context.WithoutCancel(ctx), id)
		return s.failStart(pod, c.Name, "RunContainerError", err)
	}
	s.obs.Event(pod.UID, corev1.EventTypeNormal, "Started", "Started container "+c.Name)
	s.podLog(pod).Debug("container started", "container", c.Name, "id", id, "image", tImage,
		"spec", tSpec, "create", tCreate, "start", time.Since(t0))
	if err := s.runPostStart(ctx, in, c, cfg.Labels, id); err != nil {
		return err
	}
	s.clearWaiting(pod.UID, c.Name)
	s.pruneOld(ctx, in.running, c.Name, prev)
	return nil
}

// backoffBasis is the exited instance whose exit the crash-loop back-off
// of prev's restart is measured from: the kubelet's doBackOff takes the
// newest exited instance in the pod status the sync started with. For an
// instance this sync killed for a failed probe (it was running then) that
// is the instance before it, nil when there is none: the first restart
// after a probe kill neither waits nor counts towards the back-off, and
// each later one is checked against the previous kill.
func backoffBasis(in startInput, prev *podstate.Container) *podstate.Container {
	if id, ok := in.killed[prev.Name]; !ok || id != prev.ID {
		return prev
	}
	var basis *podstate.Container
	for _, c := range in.running.Containers {
		if c.Name != prev.Name || c.ID == prev.ID || c.State != podstate.StateExited {
			continue
		}
		if basis == nil || c.Attempt > basis.Attempt || (c.Attempt == basis.Attempt && c.CreatedAt.After(basis.CreatedAt)) {
			basis = c
		}
	}
	return basis
}

// inCrashLoop applies crash-loop back-off to a container that exited. Like
// the kubelet (doBackOff), the window runs from the container's exit
// (FinishedAt): the first restart is immediate and opens a 10 s window; an
// exit inside the window waits it out and doubles the next one (to 5 min).
// A run of 10 min or more starts over.
func (s *Syncer) inCrashLoop(pod *corev1.Pod, name string, prev *podstate.Container, rq *requeue) bool {
	key := backoffKey(pod.UID, name, "crash")
	if !prev.StartedAt.IsZero() && prev.FinishedAt.Sub(prev.StartedAt) >= backoffReset {
		s.backoff.reset(key)
	}
	exited := prev.FinishedAt
	if exited.IsZero() {
		exited = s.now()
	}
	if in, left := s.backoff.inBackoff(key, exited); in {
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
			left.Round(time.Second), name, pod.Name, pod.Namespace, pod.UID)
		s.setWaiting(pod.UID, name, "CrashLoopBackOff", msg)
		s.obs.Event(pod.UID, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container "+name)
		rq.after(left)
		return true
	}
	s.backoff.next(key, exited)
	return false
}

// ImagesAdded ends every image pull back-off: images arrived (the images
// directory imported an archive), the next sync of a pod that waits for
// one tries again at once.
func (s *Syncer) ImagesAdded() { s.pullBackoff.clear() }

// ensureImage resolves the container's image per pull policy, with
// ImagePullBackOff between failed pulls.
func (s *Syncer) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container, rq *requeue, slot *slotHold) (runtimeapi.Image, error) {
	key := backoffKey(pod.UID, c.Name, "pull")
	if in, left := s.pullBackoff.inBackoff(key, time.Time{}); in {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		if why := s.pullBackoff.why(key); why != "" {
			msg += ": " + why // as the kubelet's: the last pull's error
		}
		s.setWaiting(pod.UID, c.Name, "ImagePullBackOff", msg)
		rq.after(left)
		return runtimeapi.Image{}, fmt.Errorf("image %q: %w", c.Image, errBackoff)
	}
	start, pullStart := s.now(), time.Time{}
	pullCtx := runtimeapi.WithPullStarted(ctx, func() {
		slot.release() // a pull waits mostly on the registry
		pullStart = s.now()
		s.obs.Event(pod.UID, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
	})
	pullCtx = runtimeapi.WithPullAuth(pullCtx, s.pullSecrets(pod))
	img, err := s.rt.EnsureImage(pullCtx, c.Image, c.ImagePullPolicy)
	if serr := slot.retake(ctx); serr != nil {
		return img, serr
	}
	switch {
	case err == nil:
		s.pullBackoff.reset(key)
		s.obs.Event(pod.UID, corev1.EventTypeNormal, "Pulled", pulledMessage(c.Image, img, start, pullStart, s.now()))
		return img, nil
	case errors.Is(err, runtimeapi.ErrImageNeverPull):
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
		return img, s.failStart(pod, c.Name, "ErrImageNeverPull", errors.New(msg))
	case errors.Is(err, runtimeapi.ErrImageSignature):
		// The image policy refused it (config imagePolicy): no container;
		// retried with the pull back-off (a signature may be pushed later).
		rq.after(s.pullBackoff.next(key, s.now()))
		s.pullBackoff.setWhy(key, status.SignatureValidationFailed+": "+err.Error())
		return runtimeapi.Image{}, s.failStart(pod, c.Name, status.SignatureValidationFailed, err)
	default:
		rq.after(s.pullBackoff.next(key, s.now()))
		s.pullBackoff.setWhy(key, "ErrImagePull: "+err.Error())
		return img, s.failStart(pod, c.Name, "ErrImagePull", err)
	}
}

// terminationLog creates the termination-log file of container instance id
// when the container has a terminationMessagePath. Like the kubelet, a file
// that cannot be created is logged and the container runs without it.
func (s *Syncer) terminationLog(pod *corev1.Pod, c *corev1.Container, id string) string {
	if c.TerminationMessagePath == "" {
		return ""
	}
	p, err := s.vol.TerminationLog(pod.UID, c.Name, id)
	if err != nil {
		s.podLog(pod).Warn("create termination log", "container", c.Name, "err", err)
		return ""
	}
	return p
}

func (s *Syncer) failStart(pod *corev1.Pod, name, reason string, err error) error {
	s.setWaiting(pod.UID, name, reason, err.Error())
	s.obs.Event(pod.UID, corev1.EventTypeWarning, "Failed", fmt.Sprintf("%s: %v", reason, err))
	return fmt.Errorf("container %s: %s: %w", name, reason, err)
}

func (s *Syncer) specPod(in startInput) spec.Pod {
	vols := make(map[string]spec.Volume, len(in.volumes))
	for name, p := range in.volumes {
		vols[name] = spec.Volume{HostPath: p}
	}
	for i := range in.pod.Spec.Volumes {
		v := &in.pod.Spec.Volumes[i]
		if vol, ok := vols[v.Name]; ok && (volumes.IsDataVolume(v) || v.Image != nil) { // image volumes: always read-only, as the kubelet's
			vol.ReadOnly, vol.NoExec = true, v.Image != nil
			vols[v.Name] = vol
		}
	}
	sb := in.sandbox
	pod := in.pod
	var serviceEnv []corev1.EnvVar
	var final bool
	if s.cfg.ServiceEnv != nil {
		serviceEnv, final = s.cfg.ServiceEnv(pod)
	}
	return spec.Pod{
		ServiceEnv: serviceEnv, ServiceEnvFinal: final,
		Pod: in.pod, NetNS: sb.NetNS, IPCNS: sb.IPC, UTSNS: sb.UTS, PIDNS: sb.PID,
		Hosts: sb.Dir + "/hosts", Resolv: sb.Dir + "/resolv.conf", Hostname: sb.Dir + "/hostname", Shm: sb.Dir + "/shm",
		Volumes: vols, Host: s.cfg.HostLimits, ShimGroup: shimGroupOf(sb), PodIPs: sb.IPs, HostIP: s.cfg.HostIP,
		Data:            s.podData(pod),
		Warn:            func(reason, msg string) { s.obs.Event(pod.UID, corev1.EventTypeWarning, reason, msg) },
		PrepareSubPath:  func(sp spec.SubPathMount) (string, error) { return s.vol.PrepareSubPath(pod.UID, sp) },
		MakeMountSource: s.vol.MakeMountSource,
		Users:           s.users,
		UserNS:          sb.UserNS,
		UserNSPath:      sb.User,
		IDMapped: func(src string) (string, error) {
			return s.sb.IDMapped(sandbox.Paths{Dir: sb.Dir, User: sb.User}, src)
		},
	}
}

func (s *Syncer) labels(pod *corev1.Pod, sandboxID, name string, init bool, restarts, attempt int) map[string]string {
	l := map[string]string{
		wellknown.LabelPodUID:        string(pod.UID),
		wellknown.LabelPodName:       pod.Name,
		wellknown.LabelPodNamespace:  pod.Namespace,
		wellknown.LabelContainerName: name,
		wellknown.LabelSandboxID:     sandboxID,
		wellknown.LabelSpecHash:      pod.Annotations[wellknown.AnnotationConfigHash],
		wellknown.LabelRestartCount:  strconv.Itoa(restarts),
		wellknown.LabelAttempt:       strconv.Itoa(attempt),
		wellknown.LabelGracePeriod:   strconv.FormatInt(int64(gracePeriod(pod, nil)/time.Second), 10),
	}
	if id := pod.Annotations[wellknown.AnnotationIdentityHash]; id != "" {
		l[wellknown.LabelIdentityHash] = id
	}
	if init {
		l[wellknown.LabelInit] = "true"
	}
	return l
}

// addStopLabels records on the container what its stop and exit need
// without the pod spec (orphans, restarts): the termination-message file and
// policy, the preStop hook, and lifecycle.stopSignal, which wins over the
// image's STOPSIGNAL, as in the kubelet.
func (s *Syncer) addStopLabels(l map[string]string, c *corev1.Container, termLog string) {
	if termLog != "" {
		l[wellknown.LabelTerminationLog] = termLog
		l[wellknown.LabelTerminationPolicy] = string(c.TerminationMessagePolicy)
	}
	if v := s.preStopLabel(c); v != "" {
		l[wellknown.LabelPreStop] = v
	}
	if c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
		l[wellknown.LabelStopSignal] = string(*c.Lifecycle.StopSignal)
	}
}

// pruneOld removes dead instances of a container older than the previous
// one (kept for lastState and `logs --previous`).
func (s *Syncer) pruneOld(ctx context.Context, running *podstate.Pod, name string, prev *podstate.Container) {
	for _, c := range running.Containers {
		if c.Name == name && c != prev && c.State != podstate.StateRunning {
			if err := s.removeContainer(ctx, c.ID); err != nil {
				s.log.Warn("remove old container", "id", c.ID, "err", err)
			}
		}
	}
}

// withScopeStopTimeout bounds how long systemd waits for the container's
// scope to stop when it stops it (host shutdown): the pod's grace period,
// then SIGKILL, as the kubelet would — not systemd's default 90 s (a busybox
// PID 1 ignores SIGTERM). runc turns "org.systemd.property.*" annotations
// into properties of the scope it creates.
func withScopeStopTimeout(grace time.Duration) oci.SpecOpts {
	if grace < time.Second {
		grace = time.Second
	}
	return oci.WithAnnotations(map[string]string{
		"org.systemd.property.TimeoutStopUSec": fmt.Sprintf("uint64 %d", grace.Microseconds()),
	})
}

// pullSecrets returns the docker config documents of the pod's
// imagePullSecrets (type kubernetes.io/dockerconfigjson), used for its
// pulls ahead of the runtime's auth files. Missing ones are reported as
// the kubelet does and the pull goes on.
func (s *Syncer) pullSecrets(pod *corev1.Pod) [][]byte {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil
	}
	var out [][]byte
	var missing []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		var sec *corev1.Secret
		ok := false
		if s.cfg.Data != nil {
			sec, ok = s.cfg.Data.For(pod).Secret(pod.Namespace, ref.Name)
		}
		if !ok || sec.Type != corev1.SecretTypeDockerConfigJson {
			missing = append(missing, fmt.Sprintf("%q", ref.Name))
			continue
		}
		out = append(out, sec.Data[corev1.DockerConfigJsonKey])
	}
	if len(missing) > 0 {
		s.obs.Event(pod.UID, corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			fmt.Sprintf("Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", ")))
	}
	return out
}

// imageVolumeAuth gives the pulls of pod's image volumes its
// imagePullSecrets, as its containers' pulls (ctx unchanged without image
// volumes: the secrets' look-up records an event when one is missing).
func (s *Syncer) imageVolumeAuth(ctx context.Context, pod *corev1.Pod) context.Context {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Image != nil {
			return runtimeapi.WithPullAuth(ctx, s.pullSecrets(pod))
		}
	}
	return ctx
}
