package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3"
	containerd "github.com/containerd/containerd/v2/client"
	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/host/network"
	"github.com/podhost/podhost/internal/host/sandbox"
	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/host/statedir"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/kubelet/eviction"
	"github.com/podhost/podhost/internal/services/api"
)

// CheckOptions are the inputs of Check.
type CheckOptions struct {
	Config  *config.Config
	Timeout time.Duration // containerd connection timeout; default 3s
}

// Status is the outcome of one preflight check.
type Status string

// Check outcomes, as printed.
const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn"
	StatusFail Status = "FAIL"
)

// CheckResult is one line of the preflight report.
type CheckResult struct {
	Name   string
	Status Status
	Detail string
}

// RequiredCNIPlugins are the plugins podhost's default conflist uses.
var RequiredCNIPlugins = []string{"bridge", "host-local", "portmap", "loopback"}

// probes is what the checks ask of the host (faked in tests).
type probes struct {
	containerdVersion func(ctx context.Context, address string) (string, error)
	cgroupMode        func() cgroups.CGMode
	systemdBooted     func() bool
	lookPath          func(file string) (string, error)
	// daemonFileErrors asks a running daemon for the manifest files it
	// refused (api.ErrDaemonDown when none runs).
	daemonFileErrors func(ctx context.Context, socket string) ([]api.FileError, error)
	// daemonRuntime asks a running daemon for containerd's and the state
	// db's health (nil: not asked).
	daemonRuntime func(ctx context.Context, socket string) (api.RuntimeStatus, error)
	// toolVersion runs runc or a CNI plugin for its version (nil: the
	// advisory checks of those are skipped).
	toolVersion func(ctx context.Context, path string) (string, error)
	host        hostInfo
	// localnetFirewall reports whether network.FirewallChain is in place
	// (nil: not checked).
	localnetFirewall func() (bool, error)
	// userns checks user namespaces and idmapped mounts (nil: not checked).
	userns func(dirs ...string) (string, error)
}

func hostProbes() probes {
	return probes{
		containerdVersion: containerdVersion,
		cgroupMode:        cgroups.Mode,
		systemdBooted: func() bool {
			fi, err := os.Lstat("/run/systemd/system")
			return err == nil && fi.IsDir()
		},
		lookPath: exec.LookPath,
		daemonFileErrors: func(ctx context.Context, socket string) ([]api.FileError, error) {
			return api.NewClient(socket).FileErrors(ctx)
		},
		daemonRuntime: func(ctx context.Context, socket string) (api.RuntimeStatus, error) {
			return api.NewClient(socket).Runtime(ctx)
		},
		toolVersion:      toolVersion,
		host:             realHostInfo(),
		localnetFirewall: network.FirewallInstalled,
		userns:           sandbox.CheckUserNS,
	}
}

func containerdVersion(ctx context.Context, address string) (string, error) {
	address = strings.TrimPrefix(address, "unix://") // the client adds it
	// containerd's dialer waits for a missing socket to appear; fail fast.
	if filepath.IsAbs(address) {
		if _, err := os.Stat(address); err != nil {
			return "", fmt.Errorf("socket missing (is containerd running?): %w", cmdutil.UnwrapPathError(err))
		}
	}
	c, err := containerd.New(address)
	if err != nil {
		return "", err
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		return "", err
	}
	return v.Version, nil
}

// Check runs the host preflight checks and prints one line per check. It
// returns an error when any check failed.
func Check(ctx context.Context, opts CheckOptions, s cmdutil.IOStreams) error {
	results := runChecks(ctx, opts, hostProbes())
	failed := 0
	for _, r := range results {
		fmt.Fprintf(s.Out, "%-4s  %-13s %s\n", r.Status, r.Name, r.Detail)
		if r.Status == StatusFail {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(results))
	}
	return nil
}

func runChecks(ctx context.Context, opts CheckOptions, p probes) []CheckResult {
	cfg := opts.Config
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	cdVersion, cdResult := checkContainerd(ctx, cfg.ContainerdAddress, timeout, p)
	results := []CheckResult{
		cdResult,
		checkCgroups(p.cgroupMode(), cfg.CgroupDriver, p.systemdBooted()),
		checkCNIPlugins(cfg.CNIBinDirs),
		checkCNIConf(cfg.CNIConfDir),
		checkManifestDir(cfg.ManifestDir, cfg.AllowInsecureManifests),
		checkStateDir(cfg.StateDir),
		checkStateDB(filepath.Join(cfg.StateDir, "state.db")),
		checkAllocatable(cfg.SystemReserved, admission.Host{MaxPods: cfg.MaxPods, RootDir: existingDir(cfg.StateDir),
			EvictionReservation: evictionReservation(cfg)}),
		checkRunc(p),
	}
	if p.localnetFirewall != nil {
		results = append(results, checkLocalnetFirewall(p.localnetFirewall))
	}
	if p.userns != nil {
		results = append(results, checkUserNS(cfg, p.userns))
	}
	if p.host.readFile != nil {
		results = append(results, systemdChecks(cfg, p.host)...)
	}
	results = append(results, securityChecks(ctx, cfg, cdVersion, p)...)
	return append(results, checkDaemon(ctx, cfg.Socket, timeout, p)...)
}

// checkDaemon lists, when a daemon answers on socket, the manifest files it
// refused: one warn line per file, its problems joined ("manifest-file
// web.yaml: spec.containers[0].image: Required value; metadata.labels: …"). Nothing is printed when no daemon runs (check is a preflight).
func checkDaemon(ctx context.Context, socket string, timeout time.Duration, p probes) []CheckResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fes, err := p.daemonFileErrors(ctx, socket)
	switch {
	case errors.Is(err, api.ErrDaemonDown):
		return nil
	case err != nil:
		return []CheckResult{{"daemon", StatusWarn, fmt.Sprintf("not answering at %s: %v", socket, err)}}
	}
	out := []CheckResult{{"daemon", StatusOK, fmt.Sprintf("running at %s, %d manifest files refused", socket, len(fes))}}
	if p.daemonRuntime != nil {
		if rs, err := p.daemonRuntime(ctx, socket); err == nil {
			for _, line := range strings.Split(rs.Warning(), "\n") {
				if line != "" {
					out = append(out, CheckResult{"daemon-health", StatusWarn, line})
				}
			}
		}
	}
	for _, fe := range fes {
		name := "manifest-file"
		if fe.Source == api.SourceImagesDir {
			name = "images-dir"
		}
		out = append(out, CheckResult{name, StatusWarn, fileLine(fe)})
	}
	return out
}

// fileLine is one refused file's problems on one line: its name once
// (each problem line starts with it), the problems joined with "; ".
func fileLine(fe api.FileError) string {
	lines := strings.Split(strings.TrimSpace(fe.Error), "\n")
	prefix := ""
	if i := strings.Index(lines[0], ": "); i > 0 {
		prefix = lines[0][:i+2]
	}
	for i := 1; i < len(lines); i++ {
		if prefix != "" {
			lines[i] = strings.TrimPrefix(lines[i], prefix)
		}
	}
	return strings.Join(lines, "; ")
}

// checkContainerd returns containerd's version ("" when unreachable) and
// its line.
func checkContainerd(ctx context.Context, address string, timeout time.Duration, p probes) (string, CheckResult) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := p.containerdVersion(ctx, address)
	if err != nil {
		return "", CheckResult{"containerd", StatusFail, fmt.Sprintf("not reachable at %s: %v", address, err)}
	}
	return v, CheckResult{"containerd", StatusOK, fmt.Sprintf("%s at %s", v, address)}
}

// cgroupDriver is the driver podhost would use: systemd on a unified host
// booted with systemd, else cgroupfs, unless configured explicitly.
func cgroupDriver(mode cgroups.CGMode, configured string, systemd bool) string {
	if configured != config.CgroupDriverAuto {
		return configured
	}
	if mode == cgroups.Unified && systemd {
		return config.CgroupDriverSystemd
	}
	return config.CgroupDriverCgroupfs
}

func checkCgroups(mode cgroups.CGMode, configured string, systemd bool) CheckResult {
	driver := cgroupDriver(mode, configured, systemd)
	r := CheckResult{Name: "cgroups", Status: StatusOK}
	switch mode {
	case cgroups.Unified:
		r.Detail = "v2 (unified)"
	case cgroups.Hybrid:
		r.Status, r.Detail = StatusWarn, "hybrid (v1 + v2); supported through cgroupfs, v2 unified recommended"
	case cgroups.Legacy:
		r.Status, r.Detail = StatusWarn, "v1 (legacy); supported through cgroupfs, v2 unified recommended"
	default:
		return CheckResult{"cgroups", StatusFail, "no cgroup filesystem mounted at /sys/fs/cgroup"}
	}
	r.Detail += ", driver " + driver
	switch {
	case driver == config.CgroupDriverSystemd && !systemd:
		r.Status, r.Detail = StatusFail, r.Detail+" configured but systemd is not running (/run/systemd/system missing)"
	case driver == config.CgroupDriverSystemd && mode != cgroups.Unified:
		r.Status, r.Detail = StatusWarn, r.Detail+" (the systemd driver needs cgroup v2; use cgroupfs)"
	}
	return r
}

func checkCNIPlugins(binDirs []string) CheckResult {
	var missing, found []string
	for _, plugin := range RequiredCNIPlugins {
		dir := findExecutable(plugin, binDirs)
		if dir == "" {
			missing = append(missing, plugin)
		} else if !slices.Contains(found, dir) {
			found = append(found, dir)
		}
	}
	if len(missing) > 0 {
		return CheckResult{"cni-plugins", StatusFail, fmt.Sprintf("missing %s (searched %s)",
			strings.Join(missing, ", "), strings.Join(binDirs, ", "))}
	}
	return CheckResult{"cni-plugins", StatusOK, fmt.Sprintf("%s found in %s",
		strings.Join(RequiredCNIPlugins, ", "), strings.Join(found, ", "))}
}

func findExecutable(name string, dirs []string) string {
	for _, d := range dirs {
		fi, err := os.Stat(filepath.Join(d, name))
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return d
		}
	}
	return ""
}

func checkCNIConf(dir string) CheckResult {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return CheckResult{"cni-config", StatusFail, fmt.Sprintf("%s: %v", dir, err)}
	}
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".conflist", ".conf", ".json":
			return CheckResult{"cni-config", StatusOK, fmt.Sprintf("%s: using %s", dir, e.Name())}
		}
	}
	return CheckResult{"cni-config", StatusOK, fmt.Sprintf("%s: no network config; podhost will write its default bridge conflist", dir)}
}

func checkManifestDir(dir string, allowInsecure bool) CheckResult {
	name := "manifest-dir"
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return CheckResult{name, StatusWarn, fmt.Sprintf("%s does not exist (podhost apply creates it)", dir)}
	}
	if err := source.CheckPerms(dir); err != nil {
		if !allowInsecure {
			return CheckResult{name, StatusFail, err.Error()}
		}
		return CheckResult{name, StatusWarn, err.Error() + " (allowed by allowInsecureManifests)"}
	}
	snap, err := source.Scan(dir, allowInsecure)
	if err != nil {
		return CheckResult{name, StatusFail, err.Error()}
	}
	detail := fmt.Sprintf("%s: %d pods", dir, len(snap.Pods))
	if len(snap.Errors) > 0 {
		first, _, _ := strings.Cut(snap.Errors[0].Error(), "\n")
		return CheckResult{name, StatusWarn, fmt.Sprintf("%s, %d files with errors (%s)", detail, len(snap.Errors), first)}
	}
	return CheckResult{name, StatusOK, detail}
}

func checkStateDir(dir string) CheckResult {
	name := "state-dir"
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return CheckResult{name, StatusFail, dir + " is not a directory"}
	case err == nil:
		f, err := os.CreateTemp(dir, ".podhost-check-*")
		if err != nil {
			return CheckResult{name, StatusFail, fmt.Sprintf("%s is not writable: %v", dir, err)}
		}
		f.Close()
		os.Remove(f.Name())
		return checkStateDirModes(dir)
	case !errors.Is(err, fs.ErrNotExist):
		return CheckResult{name, StatusFail, err.Error()}
	}
	parent := filepath.Dir(dir)
	for {
		if _, err := os.Stat(parent); err == nil || parent == "/" {
			break
		}
		parent = filepath.Dir(parent)
	}
	if err := syscall.Access(parent, 0o2 /* W_OK */); err != nil {
		return CheckResult{name, StatusFail, fmt.Sprintf("%s does not exist and %s is not writable: %v", dir, parent, err)}
	}
	return CheckResult{name, StatusOK, dir + " does not exist yet (will be created)"}
}

// checkStateDirModes warns when other local users could open the state
// dir or a pod dir below it (statedir.Audit): they would read the pods'
// Secret files and write into their emptyDirs.
func checkStateDirModes(dir string) CheckResult {
	name := "state-dir"
	problems, err := statedir.Audit(dir, os.Getuid())
	if err != nil {
		return CheckResult{name, StatusWarn, fmt.Sprintf("%s is writable; its modes could not be read: %v", dir, err)}
	}
	if len(problems) == 0 {
		return CheckResult{name, StatusOK, fmt.Sprintf("%s is writable, closed to other local users", dir)}
	}
	more := ""
	if len(problems) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(problems)-1)
	}
	fix := fmt.Sprintf("the daemon removes the group-write and other bits at start (it makes them %04o)", statedir.Mode)
	if !problems[0].Open() {
		fix = "chown it to the daemon's user"
	}
	return CheckResult{name, StatusWarn, fmt.Sprintf("%s%s: other local users can reach pods' volumes; %s", problems[0], more, fix)}
}

// checkAllocatable reports what the daemon would enforce on the pods' top
// cgroup (admission.Host.Enforced), or why systemReserved stops it.
func checkAllocatable(reserved corev1.ResourceList, h admission.Host) CheckResult {
	name := "allocatable"
	e, err := h.Enforced(reserved)
	if err != nil {
		return CheckResult{name, StatusFail, err.Error()}
	}
	return CheckResult{name, StatusOK, fmt.Sprintf("cpu %s, memory %s enforced on the pods' top cgroup", e.Cpu(), e.Memory())}
}

// existingDir is dir, or the nearest parent that exists (the filesystem
// the daemon will make it on).
func existingDir(dir string) string {
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// checkStateDB reports a rebuild of the state db (state.OpenRecover and
// the daemon's rebuild leave a note) and damaged copies kept next to it.
func checkStateDB(path string) CheckResult {
	name := "state-db"
	note, err := state.ReadNote(path)
	if err != nil {
		return CheckResult{name, StatusWarn, err.Error()}
	}
	copies, err := state.DamagedCopies(path)
	if err != nil {
		return CheckResult{name, StatusWarn, err.Error()}
	}
	if note == nil && len(copies) == 0 {
		return CheckResult{name, StatusOK, path + ": no rebuild recorded"}
	}
	var parts []string
	if note != nil {
		parts = append(parts, fmt.Sprintf("state was rebuilt at %s (%s), %d pods adopted",
			note.At.UTC().Format(time.RFC3339), note.Reason, note.Adopted))
	}
	if len(copies) > 0 {
		parts = append(parts, "damaged copies kept: "+strings.Join(copies, ", "))
	}
	parts = append(parts, fmt.Sprintf("remove %s and the copies once inspected", state.NotePath(path)))
	return CheckResult{name, StatusWarn, strings.Join(parts, "; ")}
}

func checkRunc(p probes) CheckResult {
	path, err := p.lookPath("runc")
	if err != nil {
		return CheckResult{"runc", StatusFail, "runc not found in PATH"}
	}
	return CheckResult{"runc", StatusOK, path}
}

// evictionReservation is what the config's hard eviction thresholds keep
// out of allocatable, as the daemon computes it (nil: the defaults').
func evictionReservation(cfg *config.Config) func(corev1.ResourceList) corev1.ResourceList {
	ts, err := eviction.Parse(cfg.EvictionHard, cfg.EvictionSoft, cfg.EvictionSoftGracePeriod)
	if err != nil {
		return nil
	}
	return func(c corev1.ResourceList) corev1.ResourceList { return eviction.Reservation(ts, c) }
}
