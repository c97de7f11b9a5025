//go:build integration

package integration

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// prjquotaMount makes an ext4 image file of size with the quota and
// project features (mkfs.ext4 -O quota,project) in a temp dir, attaches
// it to a loop device and mounts it with prjquota; it returns the mount
// point. The test's cleanup unmounts it and detaches the loop device,
// also when the test failed (registered before anything is mounted, run
// after what the test registers later: a daemon whose state dir is on it
// stops first). It skips the test, saying why, only when the kernel lacks
// quota support (the mount is refused and the kernel's config says so).
func prjquotaMount(tb testing.TB, size string) string {
	tb.Helper()
	mnt, skip := tryPrjquotaMount(tb, size)
	if skip != "" {
		tb.Skip(skip)
	}
	return mnt
}

// tryPrjquotaMount is prjquotaMount returning why it cannot mount instead
// of skipping (the bench reports it in its quota row).
func tryPrjquotaMount(tb testing.TB, size string) (mnt, skip string) {
	tb.Helper()
	dir, err := os.MkdirTemp(env.Dir, "prjquota-")
	if err != nil {
		tb.Fatal(err)
	}
	img := filepath.Join(dir, "fs.img")
	mnt = filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		tb.Fatal(err)
	}
	runCmd(tb, "truncate", "-s", size, img)
	runCmd(tb, "mkfs.ext4", "-q", "-O", "quota,project", "-E", "root_owner=0:0", img)
	loop := strings.TrimSpace(runCmd(tb, "losetup", "--find", "--show", img))
	mounted := false
	tb.Cleanup(func() {
		if mounted {
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				tb.Logf("umount %s: %v: %s; detaching it", mnt, err, out)
				_ = exec.Command("umount", "-l", mnt).Run()
			}
		}
		// A device still in use is detached when its last user goes (autoclear).
		if out, err := exec.Command("losetup", "-d", loop).CombinedOutput(); err != nil {
			tb.Errorf("losetup -d %s: %v: %s", loop, err, out)
		}
	})
	if out, err := exec.Command("mount", "-t", "ext4", "-o", "prjquota", loop, mnt).CombinedOutput(); err != nil {
		if why := kernelLacksQuota(); why != "" {
			return "", fmt.Sprintf("the kernel cannot mount ext4 with project quotas (%s): mount: %v: %s", why, err, strings.TrimSpace(string(out)))
		}
		tb.Fatalf("mount -o prjquota %s: %v: %s", loop, err, out)
	}
	mounted = true
	return mnt, ""
}

// kernelLacksQuota reads the running kernel's config (/proc/config.gz) and
// names the quota options it lacks that ext4 project quotas need; "" when
// it has them or the config cannot be read.
func kernelLacksQuota() string {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return ""
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return ""
	}
	var lacks []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		for _, opt := range []string{"CONFIG_QUOTA", "CONFIG_QFMT_V2"} {
			if sc.Text() == "# "+opt+" is not set" {
				lacks = append(lacks, opt+" is not set")
			}
		}
	}
	return strings.Join(lacks, ", ")
}

// runCmd runs a command and returns its output; a failure fails the test.
func runCmd(tb testing.TB, name string, args ...string) string {
	tb.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
