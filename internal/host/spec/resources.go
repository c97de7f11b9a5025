package spec

import (
	"context"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/model/qos"
)

// resourceOpts: cgroup limits from the container's resources (the kubelet's
// calculateLinuxResources), the explicit cgroups path, the OOM score
// adjustment, and no rlimits.
func resourceOpts(p Pod, c Container) []oci.SpecOpts {
	res := linuxResources(c.Container.Resources, p.Host)
	adj := max(qos.OOMScoreAdj(p.Pod, c.Container, c.MemoryCapacity), p.Host.MinOOMScoreAdj)
	opts := []oci.SpecOpts{
		withResources(res),
		oci.WithCgroup(c.CgroupsPath),
		withOOMScoreAdj(adj),
		withoutRlimits,
	}
	if c.PidsLimit > 0 {
		opts = append(opts, oci.WithPidsLimit(c.PidsLimit))
	}
	return opts
}

// LinuxResources is the container's cgroup limits as the spec builder sets
// them at create: what an in-place resize writes to the running task.
func LinuxResources(r corev1.ResourceRequirements, host HostLimits) *specs.LinuxResources {
	return linuxResources(r, host)
}

// linuxResources: cpu shares from the request (from the limit when the
// request is absent, not when it is an explicit 0: the kubelet's
// generateLinuxContainerResources; minimum 2), CFS quota from the limit over
// a 100ms period, the memory limit; on cgroup v2 memory.oom.group=1; with a
// swap controller, no swap. (Manifest defaulting already gives a request
// to every limit that has none, as the API server does.)
func linuxResources(r corev1.ResourceRequirements, host HostLimits) *specs.LinuxResources {
	cpuReq, cpuLim := r.Requests.Cpu(), r.Limits.Cpu()
	sharesFrom := cpuReq.MilliValue()
	if _, ok := r.Requests[corev1.ResourceCPU]; !ok {
		sharesFrom = cpuLim.MilliValue()
	}
	shares := qos.MilliCPUToShares(sharesFrom)
	period := uint64(qos.QuotaPeriod)
	cpu := &specs.LinuxCPU{Shares: &shares, Period: &period}
	if quota := qos.MilliCPUToQuota(cpuLim.MilliValue(), qos.QuotaPeriod); quota != 0 {
		cpu.Quota = &quota
	}
	res := &specs.LinuxResources{CPU: cpu}
	memLimit := r.Limits.Memory().Value()
	if memLimit > 0 {
		res.Memory = &specs.LinuxMemory{Limit: &memLimit}
	}
	unified := map[string]string{}
	if host.CgroupV2 {
		unified["memory.oom.group"] = "1"
	}
	if host.SwapController {
		switch {
		case host.CgroupV2:
			unified["memory.swap.max"] = "0"
		case memLimit > 0:
			swap := memLimit
			res.Memory.Swap = &swap
		}
	}
	if len(unified) > 0 {
		res.Unified = unified
	}
	return res
}

// withResources merges r into the spec's resources, keeping the device
// rules already there.
func withResources(r *specs.LinuxResources) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		cur := s.Linux.Resources
		cur.CPU, cur.Memory = r.CPU, r.Memory
		if len(r.Unified) > 0 {
			if cur.Unified == nil {
				cur.Unified = map[string]string{}
			}
			for k, v := range r.Unified {
				cur.Unified[k] = v
			}
		}
		return nil
	}
}

func withOOMScoreAdj(adj int) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.OOMScoreAdj = &adj
		return nil
	}
}

// withoutRlimits drops containerd's default rlimits (RLIMIT_NOFILE
// 1024:1024), as CRI's WithoutDefaultSecuritySettings: the container
// inherits the shim's limits. podhost sets none of its own, so runc never
// raises a limit (which would need CAP_SYS_RESOURCE).
func withoutRlimits(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	if s.Process != nil {
		s.Process.Rlimits = nil
	}
	return nil
}
