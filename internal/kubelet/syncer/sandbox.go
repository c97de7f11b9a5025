package syncer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/host/cgroups"
	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/model/records"
)

// cleanupTimeout bounds rollbacks and teardown, which run under a fresh
// context so a cancelled sync still cleans up after itself.
const cleanupTimeout = 30 * time.Second

// networkSetupTimeout bounds a pod's CNI ADD, as the kubelet's
// runtime-request-timeout bounds RunPodSandbox: a plugin that hangs fails
// the sandbox (retried by the next sync) instead of holding the pod, and
// its start slot, for ever.
const networkSetupTimeout = 2 * time.Minute

// recreateSandbox tears down the pod's old sandbox (if any) and makes a new
// one. Intent is recorded before anything is allocated (state Creating), and
// each step registers its rollback before the next risky call.
func (s *Syncer) recreateSandbox(ctx context.Context, pod *corev1.Pod, old records.SandboxRecord, pc cgroups.PodCgroup) (rec records.SandboxRecord, err error) {
	if old.ID != "" {
		if err := s.teardownSandbox(ctx, old); err != nil {
			return old, fmt.Errorf("tear down old sandbox %s: %w", old.ID, err)
		}
	}
	rec = records.SandboxRecord{
		ID: newID(), PodUID: pod.UID, FullName: pod.Namespace + "/" + pod.Name,
		State: records.SandboxCreating, Cgroup: pc.Name, BootID: s.cfg.BootID, CreatedAt: s.now(),
	}
	// Everything sb.Create pins or mounts lives below this dir: recorded
	// now, teardown finds it even if podhost dies in the middle of Create.
	rec.Dir = s.sb.Dir(rec.ID)
	rec.ShimGroup = s.shims.Assign(rec.ID)
	if !pod.Spec.HostNetwork {
		rec.Ports = toStatePorts(network.PortMappings(pod))
	}
	if rec.UserNS, err = s.userNamespace(pod); err != nil {
		s.shims.Release(rec.ID)
		return rec, err
	}
	if err := s.store.PutSandbox(rec); err != nil {
		s.shims.Release(rec.ID) // nothing recorded: its place in the group is free again
		return rec, fmt.Errorf("record sandbox: %w", err)
	}
	defer func() {
		if err != nil {
			if terr := s.teardownSandbox(ctx, rec); terr != nil {
				s.podLog(pod).Error("roll back sandbox", "sandbox", rec.ID, "err", terr)
			}
		}
	}()
	paths, err := s.sb.Create(ctx, rec.ID, pod, rec.UserNS)
	if err != nil {
		return rec, fmt.Errorf("create sandbox namespaces: %w", err)
	}
	rec.Dir, rec.NetNS, rec.IPC, rec.UTS, rec.User, rec.PID = paths.Dir, paths.NetNS, paths.IPC, paths.UTS, paths.User, paths.PID
	if err := s.store.PutSandbox(rec); err != nil {
		return rec, fmt.Errorf("record sandbox: %w", err)
	}
	if !pod.Spec.HostNetwork {
		nctx, cancel := context.WithTimeout(ctx, networkSetupTimeout)
		res, err := s.net.Setup(nctx, rec.ID, paths.NetNS, fromStatePorts(rec.Ports))
		cancel()
		if err != nil {
			return rec, fmt.Errorf("set up pod network: %w", err)
		}
		rec.IPs, rec.CNIResult = res.IPs, res.Raw
	}
	if err := s.sb.WriteHosts(paths, pod, rec.IPs); err != nil {
		return rec, fmt.Errorf("write hosts: %w", err)
	}
	rec.State = records.SandboxReady
	if err := s.store.PutSandbox(rec); err != nil {
		return rec, fmt.Errorf("record sandbox: %w", err)
	}
	s.podLog(pod).Info("sandbox ready", "sandbox", rec.ID, "ips", rec.IPs)
	return rec, nil
}

// userNamespace returns the range of a pod with hostUsers: false (nil for
// the others), allocated and recorded on its first sandbox: the kubelet's
// GetOrCreateUserNamespaceMappings, refused as the kubelet refuses a
// runtime without user namespaces.
func (s *Syncer) userNamespace(pod *corev1.Pod) (*records.UserNSRecord, error) {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return nil, nil
	}
	if s.cfg.UserNSUnsupported != "" || s.userns == nil {
		why := s.cfg.UserNSUnsupported
		if why == "" {
			why = "user namespaces are not set up"
		}
		return nil, fmt.Errorf("can't set spec.hostUsers: false: %s", why)
	}
	r, err := s.userns.Get(pod)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// teardownSandbox releases the network (CNI DEL with the recorded ports; an
// empty netns path when the namespace is gone, e.g. after a reboot), removes
// the pinned namespaces and files, and deletes the record. A failed DEL
// keeps the record (and so the lease) for the retry; the namespaces go at
// once, and podhost removes the masquerade rules the bridge plugin then
// skips (network.Manager.Teardown). Idempotent.
func (s *Syncer) teardownSandbox(ctx context.Context, rec records.SandboxRecord) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if rec.State != records.SandboxRemoving {
		rec.State = records.SandboxRemoving
		if err := s.store.PutSandbox(rec); err != nil {
			return err
		}
	}
	var errs []error
	start := time.Now()
	defer func() { s.log.Debug("sandbox teardown", "sandbox", rec.ID, "took", time.Since(start)) }()
	if rec.NetNS != "" || len(rec.IPs) > 0 || len(rec.CNIResult) > 0 {
		netns := rec.NetNS
		if !pathExists(netns) {
			netns = ""
		}
		if err := s.net.Teardown(ctx, rec.ID, netns, fromStatePorts(rec.Ports)); err != nil {
			errs = append(errs, fmt.Errorf("network teardown: %w", err))
		}
	}
	if rec.Dir != "" || rec.NetNS != "" {
		paths := sandbox.Paths{Dir: rec.Dir, NetNS: rec.NetNS, IPC: rec.IPC, UTS: rec.UTS, User: rec.User, PID: rec.PID}
		if err := s.sb.Remove(ctx, paths); err != nil {
			errs = append(errs, fmt.Errorf("remove namespaces: %w", err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := s.store.DeleteSandbox(rec.ID); err != nil {
		return err
	}
	s.shims.Release(rec.ID)
	return nil
}

// shimGroupOf is the group of sb's containers: the sandbox ID for records
// from before shim groups.
func shimGroupOf(sb records.SandboxRecord) string {
	if sb.ShimGroup != "" {
		return sb.ShimGroup
	}
	return sb.ID
}

func toStatePorts(in []network.PortMapping) []records.PortMapping {
	out := make([]records.PortMapping, 0, len(in))
	for _, p := range in {
		out = append(out, records.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol, HostIP: p.HostIP})
	}
	return out
}

func fromStatePorts(in []records.PortMapping) []network.PortMapping {
	out := make([]network.PortMapping, 0, len(in))
	for _, p := range in {
		out = append(out, network.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol, HostIP: p.HostIP})
	}
	return out
}

func pathExists(p string) bool {
	if p == "" {
		return false
	}
	_, err := os.Stat(p)
	return err == nil
}
