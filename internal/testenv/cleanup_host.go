//go:build integration

package testenv

// Host-level cleanup: mounts, cgroups, iptables rules.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// unmountUnder lazily unmounts every mount point at or below dir, deepest
// first (mount namespaces bind-mounted by the sandbox, container rootfs
// mounts made by the shim, anything a test mounted there).
func unmountUnder(dir string) error {
	if dir == "" || dir == "/" {
		return nil
	}
	var errs []error
	// A mount point can be mounted over several times: repeat until no
	// mount under dir is left (bounded).
	for round := 0; round < 8; round++ {
		mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
		if err != nil {
			return err
		}
		if len(mounts) == 0 {
			return nil
		}
		sort.Slice(mounts, func(i, j int) bool {
			return len(mounts[i].Mountpoint) > len(mounts[j].Mountpoint)
		})
		errs = errs[:0]
		for _, mnt := range mounts {
			if err := unix.Unmount(mnt.Mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mnt.Mountpoint, err))
			}
		}
	}
	return errors.Join(append(errs, fmt.Errorf("mounts left under %s", dir))...)
}

// removeDir removes dir, but never while anything is mounted below it: a
// bind mount of a host path must not be followed by RemoveAll.
func removeDir(dir string) error {
	if dir == "" || dir == "/" || !strings.Contains(filepath.Base(dir), NamePrefix) {
		return fmt.Errorf("refusing to remove %q", dir)
	}
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return err
	}
	if len(mounts) > 0 {
		return fmt.Errorf("not removing %s: %d mounts left below it (first: %s)", dir, len(mounts), mounts[0].Mountpoint)
	}
	return os.RemoveAll(dir)
}

// cgroupMounts returns the mount points of every cgroup v1 hierarchy and
// of the cgroup2 mount, from /proc/self/mountinfo.
func cgroupMounts() ([]string, error) {
	mounts, err := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) {
		return i.FSType != "cgroup" && i.FSType != "cgroup2", false
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range mounts {
		if !seen[m.Mountpoint] {
			seen[m.Mountpoint] = true
			out = append(out, m.Mountpoint)
		}
	}
	return out, nil
}

// removeCgroups removes prefix (e.g. /podhost-it-1234-1) and everything
// below it in every cgroup hierarchy: thaw, kill what still runs there,
// rmdir deepest first. Only prefixes of the shape Setup makes are accepted;
// host cgroups (and /sys/fs/cgroup/memory/process_api) are never touched.
func removeCgroups(ctx context.Context, prefix string) error {
	if !prefixRE.MatchString(prefix) {
		return fmt.Errorf("refusing to remove cgroup prefix %q", prefix)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, mnt := range mounts {
		root := filepath.Join(mnt, prefix)
		if strings.Contains(root, "process_api") || filepath.Dir(root) != filepath.Clean(mnt) {
			continue
		}
		if _, err := os.Stat(root); err != nil {
			continue
		}
		if err := removeCgroupTree(ctx, root); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeCgroupTree(ctx context.Context, root string) error {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	// Thaw top-down (a frozen cgroup does not die), then kill.
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "freezer.state")) {
			_ = os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0)
		}
		if fileExists(filepath.Join(d, "cgroup.freeze")) {
			_ = os.WriteFile(filepath.Join(d, "cgroup.freeze"), []byte("0"), 0)
		}
	}
	var pids []int
	for _, d := range dirs {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				pids = append(pids, pid)
			}
		}
	}
	var errs []error
	if len(pids) > 0 {
		if err := killAndWait(ctx, pids); err != nil {
			errs = append(errs, err)
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := rmdirCgroup(ctx, d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rmdirCgroup removes one (empty) cgroup. A cgroup whose last task just
// died can be EBUSY for a moment while the kernel finishes the exit: retry
// briefly.
func rmdirCgroup(ctx context.Context, d string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unix.Rmdir(d)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("rmdir %s: %w", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// iptablesCleanup deletes the iptables rules (IPv4 and IPv6; nat, filter,
// mangle) whose comment names CNI network net -- CNI's bridge (ipMasq) and
// portmap plugins tag every rule with `name: "<net>"` -- and the CNI-*
// chains that held only such rules.
func iptablesCleanup(ctx context.Context, net string) error {
	marker := `\"` + net + `\"`
	var errs []error
	for _, bin := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(bin + "-save"); err != nil {
			continue
		}
		for _, table := range []string{"nat", "filter", "mangle"} {
			out, err := exec.CommandContext(ctx, bin+"-save", "-t", table).Output()
			if err != nil {
				continue // table not available
			}
			script := iptablesDeleteScript(table, string(out), marker)
			if script == "" {
				continue
			}
			cmd := exec.CommandContext(ctx, bin+"-restore", "--noflush", "-w", "5")
			cmd.Stdin = strings.NewReader(script)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s-restore: %v: %s\n%s", bin, err, bytes.TrimSpace(out), script))
			}
		}
	}
	return errors.Join(errs...)
}

// iptablesDeleteScript turns iptables-save output of one table into an
// iptables-restore --noflush script that deletes the rules containing marker
// and the per-attachment CNI chains they lead to (CNI-<hash>, CNI-DN-<hash>,
// ...; never the shared CNI-HOSTPORT-* chains, never a chain some other
// rule still jumps to).
func iptablesDeleteScript(table, save, marker string) string {
	type rule struct {
		chain, target, line string
		ours                bool
	}
	var rules []rule
	total, ours := map[string]int{}, map[string]int{}
	for _, l := range strings.Split(save, "\n") {
		if !strings.HasPrefix(l, "-A ") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		r := rule{chain: f[1], line: l, ours: strings.Contains(l, marker)}
		for i := 2; i+1 < len(f); i++ {
			if f[i] == "-j" || f[i] == "-g" {
				r.target = f[i+1]
			}
		}
		rules = append(rules, r)
		total[r.chain]++
		if r.ours {
			ours[r.chain]++
		}
	}
	perAttachment := func(c string) bool { // and podhost's Services chains of the network (network.SyncServices)
		return strings.HasPrefix(c, "CNI-") && !strings.HasPrefix(c, "CNI-HOSTPORT-") || strings.HasPrefix(c, "PODHOST-SVC")
	}
	drop := map[string]bool{}
	for c, n := range ours {
		if perAttachment(c) && n == total[c] {
			drop[c] = true
		}
	}
	for _, r := range rules {
		if r.ours && perAttachment(r.target) {
			drop[r.target] = true
		}
	}
	// Keep chains that a rule we do not delete still jumps to.
	for changed := true; changed; {
		changed = false
		for _, r := range rules {
			if drop[r.target] && !r.ours && !drop[r.chain] {
				delete(drop, r.target)
				changed = true
			}
		}
	}
	var b strings.Builder
	for _, r := range rules {
		if drop[r.chain] {
			continue // flushed below
		}
		if r.ours || drop[r.target] {
			b.WriteString("-D " + strings.TrimPrefix(r.line, "-A ") + "\n")
		}
	}
	var chains []string
	for c := range drop {
		chains = append(chains, c)
	}
	sort.Strings(chains)
	for _, c := range chains {
		b.WriteString("-F " + c + "\n")
	}
	for _, c := range chains {
		b.WriteString("-X " + c + "\n")
	}
	if b.Len() == 0 {
		return ""
	}
	return "*" + table + "\n" + b.String() + "COMMIT\n"
}
