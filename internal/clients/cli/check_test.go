package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/cgroups/v3"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/config"
	"github.com/podhost/podhost/internal/host/state"
	"github.com/podhost/podhost/internal/kubelet/admission"
	"github.com/podhost/podhost/internal/services/api"
)

func TestCheckCgroups(t *testing.T) {
	tests := []struct {
		mode       cgroups.CGMode
		configured string
		systemd    bool
		want       Status
		detail     string
	}{
		{cgroups.Unified, "auto", true, StatusOK, "v2 (unified), driver systemd"},
		{cgroups.Unified, "auto", false, StatusOK, "v2 (unified), driver cgroupfs"},
		{cgroups.Unified, "cgroupfs", true, StatusOK, "driver cgroupfs"},
		{cgroups.Unified, "systemd", false, StatusFail, "systemd is not running"},
		{cgroups.Hybrid, "auto", true, StatusWarn, "hybrid (v1 + v2); supported through cgroupfs, v2 unified recommended, driver cgroupfs"},
		{cgroups.Legacy, "auto", false, StatusWarn, "v1 (legacy)"},
		{cgroups.Legacy, "systemd", true, StatusWarn, "needs cgroup v2"},
		{cgroups.Unavailable, "auto", true, StatusFail, "no cgroup filesystem"},
	}
	for _, tt := range tests {
		r := checkCgroups(tt.mode, tt.configured, tt.systemd)
		if r.Status != tt.want || !strings.Contains(r.Detail, tt.detail) {
			t.Errorf("checkCgroups(%v, %s, %v) = %s %q, want %s containing %q", tt.mode, tt.configured, tt.systemd, r.Status, r.Detail, tt.want, tt.detail)
		}
	}
}

func fakeProbes(containerdErr error) probes {
	return probes{
		containerdVersion: func(context.Context, string) (string, error) {
			if containerdErr != nil {
				return "", containerdErr
			}
			return "v2.2.9", nil
		},
		cgroupMode:    func() cgroups.CGMode { return cgroups.Unified },
		systemdBooted: func() bool { return true },
		lookPath:      func(string) (string, error) { return "/usr/sbin/runc", nil },
		daemonFileErrors: func(context.Context, string) ([]api.FileError, error) {
			return nil, api.ErrDaemonDown
		},
	}
}

func checkHost(t *testing.T) *config.Config {
	t.Helper()
	root := t.TempDir()
	cfg := config.Default()
	cfg.ManifestDir = filepath.Join(root, "manifests")
	cfg.StateDir = filepath.Join(root, "state")
	cfg.Socket = filepath.Join(root, "none.sock")
	cfg.CNIConfDir = filepath.Join(root, "net.d")
	cfg.CNIBinDirs = []string{filepath.Join(root, "bin1"), filepath.Join(root, "bin2")}
	for _, d := range []string{cfg.ManifestDir, cfg.CNIBinDirs[0], cfg.CNIBinDirs[1]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range RequiredCNIPlugins {
		if err := os.WriteFile(filepath.Join(cfg.CNIBinDirs[i%2], p), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

func statuses(rs []CheckResult) map[string]CheckResult {
	m := map[string]CheckResult{}
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

func TestRunChecks(t *testing.T) {
	cfg := checkHost(t)
	rs := statuses(runChecks(context.Background(), CheckOptions{Config: cfg}, fakeProbes(nil)))
	for name, r := range rs {
		if r.Status != StatusOK {
			t.Errorf("%s: %s %s", name, r.Status, r.Detail)
		}
	}
	if !strings.Contains(rs["state-dir"].Detail, "will be created") {
		t.Errorf("state-dir: %q", rs["state-dir"].Detail)
	}
	if !strings.Contains(rs["cni-config"].Detail, "will write its default") {
		t.Errorf("cni-config: %q", rs["cni-config"].Detail)
	}

	// Break things.
	if err := os.Remove(filepath.Join(cfg.CNIBinDirs[1], "host-local")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg.ManifestDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg.CNIConfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.CNIConfDir, "10-mine.conflist"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := fakeProbes(errors.New("connection refused"))
	p.lookPath = func(string) (string, error) { return "", errors.New("not found") }
	rs = statuses(runChecks(context.Background(), CheckOptions{Config: cfg}, p))
	want := map[string]Status{
		"containerd": StatusFail, "cni-plugins": StatusFail, "manifest-dir": StatusFail,
		"runc": StatusFail, "cni-config": StatusOK, "cgroups": StatusOK, "state-dir": StatusOK,
	}
	for name, st := range want {
		if rs[name].Status != st {
			t.Errorf("%s = %s %q, want %s", name, rs[name].Status, rs[name].Detail, st)
		}
	}
	if !strings.Contains(rs["cni-plugins"].Detail, "missing host-local") || !strings.Contains(rs["cni-config"].Detail, "10-mine.conflist") {
		t.Errorf("details: %q / %q", rs["cni-plugins"].Detail, rs["cni-config"].Detail)
	}
	cfg.AllowInsecureManifests = true
	rs = statuses(runChecks(context.Background(), CheckOptions{Config: cfg}, p))
	if rs["manifest-dir"].Status != StatusWarn {
		t.Errorf("manifest-dir with allowInsecure = %s", rs["manifest-dir"].Status)
	}
}

// The state dir's check warns when other local users could open it or a
// pod dir below it, naming the dir and its mode.
func TestCheckStateDirModes(t *testing.T) {
	cfg := checkHost(t)
	pod := filepath.Join(cfg.StateDir, "pods", "uid1")
	if err := os.MkdirAll(pod, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg.StateDir, 0o750); err != nil {
		t.Fatal(err)
	}
	if r := checkStateDir(cfg.StateDir); r.Status != StatusOK || !strings.Contains(r.Detail, "closed to other local users") {
		t.Errorf("0750: %s %q", r.Status, r.Detail)
	}
	if err := os.Chmod(pod, 0o755); err != nil {
		t.Fatal(err)
	}
	r := checkStateDir(cfg.StateDir)
	if want := pod + " is mode 0755: other local users can reach pods' volumes"; r.Status != StatusWarn || !strings.HasPrefix(r.Detail, want) {
		t.Errorf("open pod dir: %s %q, want warn %q", r.Status, r.Detail, want)
	}
}

func TestCheckLocalnetFirewall(t *testing.T) {
	for _, tt := range []struct {
		ok   bool
		err  error
		want Status
		text string
	}{
		{true, nil, StatusOK, "drops packets from pods"},
		{false, nil, StatusWarn, "is not installed"},
		{false, errors.New("exit status 3"), StatusWarn, "pods with hostPorts will not start"},
	} {
		r := checkLocalnetFirewall(func() (bool, error) { return tt.ok, tt.err })
		if r.Status != tt.want || !strings.Contains(r.Detail, tt.text) {
			t.Errorf("installed=%v err=%v: %s %q, want %s %q", tt.ok, tt.err, r.Status, r.Detail, tt.want, tt.text)
		}
	}
}

func TestCheckPrintsAndFails(t *testing.T) {
	cfg := checkHost(t)
	cfg.ContainerdAddress = filepath.Join(t.TempDir(), "no.sock")
	var out bytes.Buffer
	err := Check(context.Background(), CheckOptions{Config: cfg}, cmdutil.IOStreams{Out: &out, ErrOut: &out})
	if err == nil || !strings.Contains(err.Error(), "checks failed") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(out.String(), "FAIL  containerd    not reachable at "+cfg.ContainerdAddress) {
		t.Errorf("out:\n%s", out.String())
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.Contains(line, "-cves ") { // the advisories of this host's runc and CNI plugins
			n++
		}
	}
	if n != 15 { // 9 + localnet-fw, userns, watchdog, node-shutdown, apparmor, seccomp
		t.Errorf("%d lines, want 15:\n%s", n, out.String())
	}
}

func TestCheckUserNS(t *testing.T) {
	cfg := checkHost(t)
	var dirs []string
	ok := func(d ...string) (string, error) { dirs = d; return "ext4 (/x), tmpfs", nil }
	r := checkUserNS(cfg, ok)
	if os.Geteuid() != 0 {
		if r.Status != StatusWarn || !strings.Contains(r.Detail, "needs root") {
			t.Fatalf("non-root: %s %q", r.Status, r.Detail)
		}
		return
	}
	if r.Status != StatusOK || r.Detail != "hostUsers: false: user namespaces, idmapped mounts on ext4 (/x), tmpfs" {
		t.Errorf("ok: %s %q", r.Status, r.Detail)
	}
	if len(dirs) != 2 || dirs[0] != filepath.Join(cfg.StateDir, "pods") || dirs[1] != cfg.RunDir {
		t.Errorf("checked %v, want the pods dir and the run dir", dirs)
	}
	r = checkUserNS(cfg, func(...string) (string, error) {
		return "", errors.New("no idmapped mounts on nfs (/var/lib/podhost/pods): EINVAL")
	})
	if r.Status != StatusWarn || r.Detail != "pods with hostUsers: false will be refused: no idmapped mounts on nfs (/var/lib/podhost/pods): EINVAL" {
		t.Errorf("refused: %s %q", r.Status, r.Detail)
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := Version(VersionOptions{}, cmdutil.IOStreams{Out: &out}); err != nil || !strings.HasPrefix(out.String(), "podhost dev (commit ") {
		t.Errorf("text = %q, %v", out.String(), err)
	}
	out.Reset()
	if err := Version(VersionOptions{Output: "json"}, cmdutil.IOStreams{Out: &out}); err != nil {
		t.Fatal(err)
	}
	var v map[string]string
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || v["version"] != "dev" || !strings.HasPrefix(v["goVersion"], "go") {
		t.Errorf("json = %q, %v", out.String(), err)
	}
	if err := Version(VersionOptions{Output: "yaml"}, cmdutil.IOStreams{Out: &out}); err == nil {
		t.Error("yaml output: want error")
	}
}

// checkAllocatable: what is enforced, or why systemReserved stops the
// daemon.
func TestCheckAllocatable(t *testing.T) {
	h := admission.Host{NumCPU: func() int { return 2 }, MemInfo: func() ([]byte, error) { return []byte("MemTotal: 4194304 kB\n"), nil }}
	r := checkAllocatable(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}, h)
	if r.Status != StatusOK || r.Detail != "cpu 1500m, memory 3Gi enforced on the pods' top cgroup" {
		t.Errorf("reserved 500m, 1Gi: %s %q", r.Status, r.Detail)
	}
	r = checkAllocatable(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}, h)
	if r.Status != StatusFail || !strings.Contains(r.Detail, "systemReserved") || !strings.Contains(r.Detail, "memory 8Gi") {
		t.Errorf("reserved 8Gi of 4Gi: %s %q", r.Status, r.Detail)
	}
}

func TestCheckStateDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if r := checkStateDB(path); r.Status != StatusOK {
		t.Fatalf("no db: %s %q", r.Status, r.Detail)
	}
	if err := os.WriteFile(path, []byte("garbage, not a bbolt file at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	db, rec, err := state.OpenRecover(path)
	if err != nil || rec == nil {
		t.Fatalf("OpenRecover = %+v, %v", rec, err)
	}
	db.Close()
	r := checkStateDB(path)
	if r.Status != StatusWarn || !strings.Contains(r.Detail, "rebuilt") || !strings.Contains(r.Detail, rec.DamagedCopy) {
		t.Fatalf("after recovery: %s %q", r.Status, r.Detail)
	}
}

// One line per refused file, its problems joined, the file named once.
func TestCheckListsDaemonFileErrors(t *testing.T) {
	cfg := checkHost(t)
	p := fakeProbes(nil)
	p.daemonFileErrors = func(context.Context, string) ([]api.FileError, error) {
		return []api.FileError{
			{File: "/m/fifo.yaml", Error: "fifo.yaml: not a regular file"},
			{File: "/m/open.yaml", Error: "open.yaml: insecure permissions: mode 0666 is group- or world-writable\nopen.yaml: second problem"},
		}, nil
	}
	rs := runChecks(context.Background(), CheckOptions{Config: cfg}, p)
	var got []string
	for _, r := range rs[10:] { // the 9 host checks, containerd's advisories
		got = append(got, fmt.Sprintf("%s %s %s", r.Status, r.Name, r.Detail))
	}
	want := []string{
		"ok daemon running at " + cfg.Socket + ", 2 manifest files refused",
		"warn manifest-file fifo.yaml: not a regular file",
		"warn manifest-file open.yaml: insecure permissions: mode 0666 is group- or world-writable; second problem",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("daemon lines\n%q\nwant\n%q", got, want)
	}
	if rs := runChecks(context.Background(), CheckOptions{Config: cfg}, fakeProbes(nil)); len(rs) != 10 {
		t.Fatalf("no daemon: %d results, want the 9 host checks and containerd's advisories", len(rs))
	}
}
