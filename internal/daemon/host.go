package daemon

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podhost/podhost/internal/host/spec"
)

// bootID is the kernel's boot id: it changes with every boot, which tells
// podhost that every sandbox it recorded is gone.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// hostLimits reads what this host lets podhost grant containers: without
// CAP_SYS_RESOURCE an oom_score_adj below our own makes runc fail ("can't
// get final child's PID from pipe"); containerd calls this
// restrict_oom_score_adj. (Specs carry no rlimits: containers inherit the
// shim's, as under CRI.)
func hostLimits() spec.HostLimits {
	l := spec.HostLimits{MinOOMScoreAdj: -1000}
	if b, err := os.ReadFile("/proc/self/oom_score_adj"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && !hasCapSysResource() {
			l.MinOOMScoreAdj = v
		}
	}
	return l
}

// featureProber is *runtime.Runtime's view of the runtime's features.
type featureProber interface {
	RecursiveReadOnlyMounts(ctx context.Context) (bool, error)
}

// recursiveReadOnlyMounts asks whether the runtime supports recursively
// read-only mounts (volumeMounts' recursiveReadOnly). A failed probe counts
// as no support for that mount, as in containerd's CRI
// (introspectRuntimeHandler): IfPossible mounts are then plain read-only
// and Enabled ones fail (and are retried).
func recursiveReadOnlyMounts(ctx context.Context, p featureProber, log *slog.Logger) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, featureProbeTimeout)
	defer cancel()
	ok, err := p.RecursiveReadOnlyMounts(ctx)
	if err != nil {
		log.Warn("runtime features: recursive read-only mounts taken as unsupported", "err", err)
		return false, err
	}
	log.Info("runtime features", "recursiveReadOnlyMounts", ok)
	return ok, nil
}

// featureCache keeps the runtime's answer once it gave one: asked on the
// first mount that needs it (not at start: it runs the shim and runc), and
// asked again after a failure (containerd restarting), not cached as "no".
type featureCache struct {
	mu     sync.Mutex
	known  bool
	answer bool
	ask    func() (bool, error)
}

func (c *featureCache) get() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		ok, err := c.ask()
		if err != nil {
			return false
		}
		c.known, c.answer = true, ok
	}
	return c.answer
}

// featureProbeTimeout bounds the runtime features probe (the shim runs
// `runc features`).
const featureProbeTimeout = 30 * time.Second

// hasCapSysResource reports whether our effective capability set holds
// CAP_SYS_RESOURCE (bit 24).
func hasCapSysResource() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	return false
}

// memoryCapacity is MemTotal in bytes.
func memoryCapacity() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// swapControllerAvailable is the kubelet's (kuberuntime_container_linux.go):
// the memory controller accounts swap when the v1 memory hierarchy has
// memory.memsw.limit_in_bytes, or, on v2, the cgroup podhost runs in (the
// root has no memory files) has memory.swap.max. Containers then get no
// swap (its default NoSwap). root is /sys/fs/cgroup; selfCgroup is
// /proc/self/cgroup's content.
func swapControllerAvailable(root string, v2 bool, selfCgroup string) bool {
	p := filepath.Join(root, "memory", "memory.memsw.limit_in_bytes")
	if v2 {
		self, ok := unifiedPath(selfCgroup)
		if !ok {
			return false
		}
		p = filepath.Join(root, self, "memory.swap.max")
	}
	_, err := os.Stat(p)
	return err == nil
}

// unifiedPath is the cgroup v2 path in /proc/<pid>/cgroup's "0::<path>".
func unifiedPath(procCgroup string) (string, bool) {
	for _, line := range strings.Split(procCgroup, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, true
		}
	}
	return "", false
}
