//go:build integration

package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"golang.org/x/sys/unix"
)

// meta is what cleanup needs to know about an Env. Setup writes it to
// <Dir>/env.json so that a later run can reap an Env whose test process died
// without running Close (go test -timeout, a panic in a test goroutine,
// SIGKILL).
type meta struct {
	OwnerPID        int      `json:"ownerPID"`
	OwnerStart      uint64   `json:"ownerStart"`
	Dir             string   `json:"dir"`
	BinDir          string   `json:"binDir"`
	Address         string   `json:"address"`
	ConfigPath      string   `json:"configPath"`
	State           string   `json:"state"`
	Namespace       string   `json:"namespace"`
	CgroupPrefix    string   `json:"cgroupPrefix"`
	CNINetwork      string   `json:"cniNetwork"`
	CNIBridge       string   `json:"cniBridge"`
	CNICacheDir     string   `json:"cniCacheDir"`
	CNIBinDirs      []string `json:"cniBinDirs"`
	ContainerdPID   int      `json:"containerdPID"`
	ContainerdStart uint64   `json:"containerdStart"`
}

const metaFile = "env.json"

// runcRoot is where containerd-shim-runc-v2 tells runc to keep its state by
// default: /run/containerd/runc/<namespace>/<id>, whatever containerd's own
// root and state are. That is why every Env gets a namespace of its own.
const runcRoot = "/run/containerd/runc"

// shimSocketDir is where shims put their sockets (pkg/shim.SocketAddress),
// again whatever containerd's state dir is.
const shimSocketDir = "/run/containerd/s"

var (
	// prefixRE is the only shape of cgroup prefix cleanup will ever remove.
	prefixRE = regexp.MustCompile(`^/` + regexp.QuoteMeta(NamePrefix) + `[0-9]+-[0-9]+$`)
	bridgeRE = regexp.MustCompile(`^phit[0-9]+-[0-9]+$`)
)

func writeMeta(m *meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(m.Dir, metaFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(m.Dir, metaFile))
}

// statFields returns the fields of /proc/<pid>/stat after "(comm)" (f[0]
// is field 3, the state); nil if pid is gone. comm may contain spaces and
// parens: fields start after the last ')'.
func statFields(pid int) []string {
	if pid <= 0 {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// procStart returns the start time (clock ticks since boot) of pid, or 0 if
// it does not exist. (pid, start) identifies a process across PID reuse.
func procStart(pid int) uint64 {
	f := statFields(pid)
	if len(f) < 20 { // starttime is field 22
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// ParentPID returns the parent PID of pid (0 if it is gone).
func ParentPID(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func alive(pid int, start uint64) bool {
	return pid > 0 && start != 0 && procStart(pid) == start
}

func procCmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// Reap cleans up what Envs of dead test processes left behind under base
// (default: the directory Setup puts Envs in). Envs whose owner still runs
// are left alone. Setup calls it; so does `make test-integration` after the
// test run (go run ./internal/testenv/cmd/reap), which covers test binaries
// killed by -timeout or by a panic in a test goroutine.
func Reap(ctx context.Context, base string) error {
	if base == "" {
		base = baseDir()
	}
	entries, err := filepath.Glob(filepath.Join(base, NamePrefix+"*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range entries {
		if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, metaFile))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// Setup died before writing env.json: nothing was started yet,
				// but be careful anyway and only remove it if nothing is mounted.
				if st, err := os.Stat(dir); err == nil && st.IsDir() && time.Since(st.ModTime()) > time.Hour {
					errs = append(errs, removeDir(dir))
				}
				continue
			}
			errs = append(errs, err)
			continue
		}
		var m meta
		if err := json.Unmarshal(b, &m); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, err))
			continue
		}
		if m.Dir != dir || alive(m.OwnerPID, m.OwnerStart) {
			continue
		}
		fmt.Fprintf(os.Stderr, "testenv: reaping %s (test process %d is gone)\n", dir, m.OwnerPID)
		errs = append(errs, cleanup(ctx, &m))
	}
	return errors.Join(errs...)
}

// cleanup removes everything an Env may have left: processes, mounts,
// cgroups, CNI attachments, the bridge, runc state and the Env's directory.
// It works from meta alone, without containerd, and is idempotent.
func cleanup(ctx context.Context, m *meta) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	// containerd, if still running (reaper path: Close stopped its own).
	if alive(m.ContainerdPID, m.ContainerdStart) && cmdlineHas(m.ContainerdPID, m.ConfigPath) {
		add(killAndWait(ctx, []int{m.ContainerdPID}))
	}

	// runc containers: runc delete --force kills every process in the
	// container's cgroup and removes the cgroup and runc's state.
	bundles, _ := filepath.Glob(filepath.Join(m.State, "io.containerd.runtime.v2.task", "*", "*"))
	runcRoots := map[string]bool{}
	if m.Namespace != "" {
		runcRoots[filepath.Join(runcRoot, m.Namespace)] = true
	}
	for _, b := range bundles {
		ns, id := filepath.Base(filepath.Dir(b)), filepath.Base(b)
		root := filepath.Join(runcRoot, ns)
		runcRoots[root] = true
		if _, err := os.Stat(filepath.Join(root, id)); err == nil {
			add(runcDelete(ctx, m.BinDir, root, id))
		}
	}
	for root := range runcRoots {
		os.Remove(root) // only if empty: another containerd may use it
	}

	// Shims: found by the private containerd address on their command
	// line, which no other process on the machine can carry.
	shims := findShims(m.Address)
	add(killAndWait(ctx, shims))
	for _, b := range bundles {
		removeShimSocket(b)
	}
	// PID 1 of the shared PID namespaces of the pods the env's podhosts
	// made (shareProcessNamespace): outside any container and cgroup of
	// the env, found by their binary, built under its dir.
	add(killAndWait(ctx, findPause(m.Dir)))

	// CNI: DEL every attachment cached in our private cache dir, and those
	// of our (unique) network in libcni's default cache dir, which go-cni
	// always uses, so IPAM leases, veths and iptables rules (ipMasq, portmap)
	// go away.
	add(cniDelAll(ctx, m.CNICacheDir, m.CNIBinDirs, ""))
	if m.CNINetwork != "" {
		add(cniDelAll(ctx, defaultCNICacheDir, m.CNIBinDirs, m.CNINetwork))
		// The bridge plugin only removes its ipMasq rules when the netns
		// still exists at DEL time; portmap rules leak when DEL never ran.
		// Both carry the network name in a comment.
		add(iptablesCleanup(ctx, m.CNINetwork))
	}

	add(unmountUnder(m.Dir))
	add(removeCgroups(ctx, m.CgroupPrefix))
	if bridgeRE.MatchString(m.CNIBridge) {
		if _, err := os.Stat("/sys/class/net/" + m.CNIBridge); err == nil {
			if out, err := exec.CommandContext(ctx, "ip", "link", "del", m.CNIBridge).CombinedOutput(); err != nil {
				add(fmt.Errorf("ip link del %s: %v: %s", m.CNIBridge, err, out))
			}
		}
	}
	add(removeDir(m.Dir))
	return errors.Join(errs...)
}

func cmdlineHas(pid int, arg string) bool {
	for _, a := range procCmdline(pid) {
		if a == arg {
			return true
		}
	}
	return false
}

// Shims returns the PIDs of the containerd shims of the env's containerd.
func (e *Env) Shims() []int { return findShims(e.Address) }

// findShims returns the PIDs of containerd shims connected to address.
func findShims(address string) []int {
	if address == "" {
		return nil
	}
	return procsMatching(func(pid int) bool {
		args := procCmdline(pid)
		if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			return false
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-address" && args[i+1] == address {
				return true
			}
		}
		return false
	})
}

// procsMatching returns the PIDs of the processes match accepts.
func procsMatching(match func(pid int) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && match(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// findPause returns the PIDs of the pause processes (podhost-pause, or
// podhost run as "pause") whose executable lies under dir.
func findPause(dir string) []int {
	if dir == "" {
		return nil
	}
	return procsMatching(func(pid int) bool {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		if err != nil || !strings.HasPrefix(exe, dir+"/") {
			return false
		}
		args := procCmdline(pid)
		return strings.HasPrefix(filepath.Base(exe), PauseName) || len(args) > 1 && args[1] == "pause"
	})
}

// killAndWait SIGKILLs pids and waits (on pidfds, no polling) until they
// are gone.
func killAndWait(ctx context.Context, pids []int) error {
	var errs []error
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			errs = append(errs, fmt.Errorf("pidfd_open %d: %w", pid, err))
			continue
		}
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
		if err := waitPidfd(ctx, fd); err != nil {
			errs = append(errs, fmt.Errorf("wait for %d: %w", pid, err))
		}
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

// waitPidfd blocks until the process behind fd exits (the pidfd becomes
// readable) or ctx is done.
func waitPidfd(ctx context.Context, fd int) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	for {
		ms := int(time.Until(deadline).Milliseconds())
		if ms <= 0 {
			return context.DeadlineExceeded
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, min(ms, 1000))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func runcDelete(ctx context.Context, binDir, root, id string) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		if p := filepath.Join(binDir, "runc"); fileExists(p) {
			runc = p
		} else {
			return fmt.Errorf("runc delete %s: %w", id, err)
		}
	}
	out, err := exec.CommandContext(ctx, runc, "--root", root, "delete", "--force", id).CombinedOutput()
	if err != nil && !bytes.Contains(out, []byte("does not exist")) {
		return fmt.Errorf("runc --root %s delete --force %s: %v: %s", root, id, err, bytes.TrimSpace(out))
	}
	// runc delete removes its state dir; make sure, it is ours.
	os.RemoveAll(filepath.Join(root, id))
	return nil
}

// removeShimSocket removes the shim socket named in a bundle's
// bootstrap.json, which a SIGKILLed shim leaves in /run/containerd/s.
func removeShimSocket(bundle string) {
	b, err := os.ReadFile(filepath.Join(bundle, "bootstrap.json"))
	if err != nil {
		return
	}
	var p struct {
		Address string `json:"address"`
	}
	if json.Unmarshal(b, &p) != nil {
		return
	}
	sock := strings.TrimPrefix(p.Address, "unix://")
	if filepath.Dir(sock) == shimSocketDir {
		os.Remove(sock)
	}
}

// defaultCNICacheDir is libcni's cache dir when none is configured.
const defaultCNICacheDir = "/var/lib/cni"

// cniDelAll runs CNI DEL for every attachment libcni cached under cacheDir
// (only those of network onlyNet, and go-cni's loopback attachments of the
// same containers, if onlyNet is set), with the cached config and runtime
// args (netns path as cached, or none if it is gone).
func cniDelAll(ctx context.Context, cacheDir string, binDirs []string, onlyNet string) error {
	if cacheDir == "" {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(cacheDir, "results", "*"))
	if len(files) == 0 {
		return nil
	}
	cni := libcni.NewCNIConfigWithCacheDir(binDirs, cacheDir, nil)
	type entry struct {
		file        string
		ContainerID string `json:"containerId"`
		IfName      string `json:"ifName"`
		NetworkName string `json:"networkName"`
	}
	var entries []entry
	ours := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		c := entry{file: f}
		if err := json.Unmarshal(b, &c); err != nil || c.ContainerID == "" || c.NetworkName == "" {
			continue
		}
		if onlyNet == "" || c.NetworkName == onlyNet {
			ours[c.ContainerID] = true
		}
		entries = append(entries, c)
	}
	var errs []error
	for _, c := range entries {
		f := c.file
		if !ours[c.ContainerID] || (onlyNet != "" && c.NetworkName != onlyNet && c.NetworkName != "cni-loopback") {
			continue
		}
		rt := &libcni.RuntimeConf{ContainerID: c.ContainerID, IfName: c.IfName}
		confBytes, cachedRT, err := cni.GetNetworkListCachedConfig(&libcni.NetworkConfigList{Name: c.NetworkName}, rt)
		if err != nil || confBytes == nil || cachedRT == nil {
			errs = append(errs, fmt.Errorf("cni cache %s: no cached config: %v", f, err))
			continue
		}
		list, err := libcni.ConfListFromBytes(confBytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("cni cache %s: %w", f, err))
			continue
		}
		if cachedRT.NetNS != "" && !fileExists(cachedRT.NetNS) {
			cachedRT.NetNS = ""
		}
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = cni.DelNetworkList(dctx, list, cachedRT)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("cni DEL %s/%s: %w", c.NetworkName, c.ContainerID, err))
		}
		os.Remove(f) // libcni removes it on success; never retry forever
	}
	return errors.Join(errs...)
}
