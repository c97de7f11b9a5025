//go:build integration

package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
)

// NamePrefix starts every name an Env makes: its directory
// (<tmp>/podhost-it-<pid>-<n>-<random>), its containerd namespace and its
// cgroup prefix (podhost-it-<pid>-<n>).
const NamePrefix = "podhost-it-"

// CNIBinDir is where Debian's containernetworking-plugins installs the
// CNI plugins.
const CNIBinDir = "/usr/lib/cni"

// Env is one private containerd and everything around it for integration
// tests. All fields are read-only for tests.
type Env struct {
	// Dir is the Env's temp dir; everything below it is removed by Close.
	Dir string
	// RepoRoot is the podhost module's root directory.
	RepoRoot string
	// BinDir holds containerd, containerd-shim-runc-v2 and ctr (the cache
	// dir scripts/deps.sh builds them into).
	BinDir string

	// Address is the private containerd's gRPC socket; TTRPCAddress its
	// ttrpc socket. Never the system's /run/containerd/containerd.sock.
	Address, TTRPCAddress string
	// Namespace is the containerd namespace tests must use
	// (podhost-it-<pid>-<n>): runc keeps state in
	// /run/containerd/runc/<namespace>/<id> whatever containerd's root is,
	// so two Envs never share one.
	Namespace string
	// Root and State are containerd's root and state dirs; ConfigPath its
	// config.toml; ContainerdLog its stdout+stderr.
	Root, State, ConfigPath, ContainerdLog string
	// Snapshotter is the snapshotter to use: "overlayfs" when the kernel
	// supports it there, else "native".
	Snapshotter string

	// CNIConfDir is a private CNI conf dir holding one conflist
	// (10-podhost-it.conflist: network CNINetwork, bridge CNIBridge, subnet
	// CNISubnet, host-local leases under Dir) derived from
	// manifests/cni/10-podhost.conflist. CNIBinDirs is [/usr/lib/cni].
	// CNICacheDir is a private libcni cache dir: pass it to go-cni
	// (network.Config.CacheDir) so Close can CNI DEL whatever a test left.
	CNIConfDir  string
	CNIBinDirs  []string
	CNICacheDir string
	CNINetwork  string
	CNIBridge   string
	CNISubnet   string

	// RunDir is a scratch runtime dir for podhost (--run-dir): pinned
	// namespaces made below it are unmounted by Close.
	RunDir string

	// ImageTar is the test image (OCI layout tarball, see BuildImage);
	// ImageRef its name, podhost.test/busybox:1.
	ImageTar, ImageRef string

	// PodhostBin is the podhost binary built from ./cmd/podhost by Setup,
	// or "" if that build failed; PodhostBuildErr then says why. Use
	// RequirePodhost in tests that need it.
	PodhostBin      string
	PodhostBuildErr error
	// LogDriverBin is podhost-log-driver, built beside PodhostBin (same
	// availability).
	LogDriverBin string

	// CgroupPrefix is the cgroup every test cgroup must live under
	// ("/"+Namespace, e.g. /podhost-it-1234-1): in each cgroup v1 hierarchy
	// and in the cgroup2 mount. containerd's default spec puts containers in
	// /<namespace>/<id>, i.e. under it. Close removes it everywhere.
	CgroupPrefix string

	meta meta

	mu            sync.Mutex
	cmd           *exec.Cmd
	exited        chan struct{}
	containerdErr error
	client        *client.Client

	closeOnce sync.Once
	closeErr  error

	clusterOnce sync.Once // PodhostClusterBin
	clusterBin  string
	clusterErr  error
}

var envSeq atomic.Int32

// baseDir is where Envs are made: $PODHOST_TEST_TMPDIR, else the system
// temp dir. Keep it short: containerd's socket path must fit in 108 bytes.
func baseDir() string {
	if d := os.Getenv("PODHOST_TEST_TMPDIR"); d != "" {
		return d
	}
	return os.TempDir()
}

// CacheDir is where built artifacts are cached between runs
// ($PODHOST_CACHE_DIR, default /var/cache/podhost-test; shared with
// scripts/deps.sh).
func CacheDir() string {
	if d := os.Getenv("PODHOST_CACHE_DIR"); d != "" {
		return d
	}
	return "/var/cache/podhost-test"
}

// Setup makes a new Env: installs or locates the dependencies
// (scripts/deps.sh), builds or reuses the test image, starts a private
// containerd, writes a private CNI config and builds podhost. It must run as
// root. On error, whatever was started is cleaned up again.
//
// Setup also reaps the Envs of earlier test processes that died without
// closing theirs.
func Setup(ctx context.Context) (*Env, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("testenv: integration tests must run as root")
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	if err := Reap(ctx, ""); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: reaping old envs: %v\n", err)
	}
	binDir, err := Deps(ctx, root)
	if err != nil {
		return nil, err
	}
	// Found (deps.sh built it) before any test, under Setup's deadline,
	// never inside the first test that needs it.
	if _, err := RegistryBin(ctx); err != nil {
		return nil, err
	}
	imageTar, ref, err := BuildImage(filepath.Join(CacheDir(), "images"))
	if err != nil {
		return nil, err
	}

	n := envSeq.Add(1)
	name := fmt.Sprintf("%s%d-%d", NamePrefix, os.Getpid(), n)
	dir, err := os.MkdirTemp(baseDir(), name+"-")
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	// Traversable, as /run/containerd (0711): runc init of a container in
	// a user namespace (hostUsers: false) reaches the bundle's rootfs below
	// containerd's state dir as the pod's unprivileged host uid.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	e := &Env{
		Dir:           dir,
		RepoRoot:      root,
		BinDir:        binDir,
		Address:       filepath.Join(dir, "containerd.sock"),
		TTRPCAddress:  filepath.Join(dir, "containerd.sock.ttrpc"),
		Namespace:     name,
		Root:          filepath.Join(dir, "root"),
		State:         filepath.Join(dir, "state"),
		ConfigPath:    filepath.Join(dir, "config.toml"),
		ContainerdLog: filepath.Join(dir, "containerd.log"),
		CNIConfDir:    filepath.Join(dir, "cni", "net.d"),
		CNIBinDirs:    []string{CNIBinDir},
		CNICacheDir:   filepath.Join(dir, "cni", "cache"),
		CNINetwork:    name,
		CNIBridge:     fmt.Sprintf("phit%d-%d", os.Getpid(), n),
		CNISubnet:     pickSubnet(os.Getpid()*8 + int(n)),
		RunDir:        filepath.Join(dir, "run"),
		ImageTar:      imageTar,
		ImageRef:      ref,
		CgroupPrefix:  "/" + name,
	}
	if len(e.Address) > 100 {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("testenv: socket path %s too long; set PODHOST_TEST_TMPDIR to a shorter dir", e.Address)
	}
	e.meta = meta{
		OwnerPID:     os.Getpid(),
		OwnerStart:   procStart(os.Getpid()),
		Dir:          dir,
		BinDir:       binDir,
		Address:      e.Address,
		ConfigPath:   e.ConfigPath,
		State:        e.State,
		Namespace:    e.Namespace,
		CgroupPrefix: e.CgroupPrefix,
		CNINetwork:   e.CNINetwork,
		CNIBridge:    e.CNIBridge,
		CNICacheDir:  e.CNICacheDir,
		CNIBinDirs:   e.CNIBinDirs,
	}
	if err := writeMeta(&e.meta); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if err := e.setup(ctx); err != nil {
		if cerr := e.Close(); cerr != nil {
			err = fmt.Errorf("%w (cleanup: %v)", err, cerr)
		}
		return nil, fmt.Errorf("testenv: %w", err)
	}
	return e, nil
}

func (e *Env) setup(ctx context.Context) error {
	for _, d := range []string{e.Root, e.State, e.CNIConfDir, e.CNICacheDir, e.RunDir, filepath.Join(e.Dir, "bin")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return err
		}
	}
	if os.Getenv("PODHOST_TEST_RUN_TMPFS") != "" {
		// /run as on an appliance: containerd's state and podhost's run
		// dirs on tmpfs (unmounted with the rest under Dir by cleanup).
		for _, d := range []string{e.State, e.RunDir} {
			if err := syscall.Mount("tmpfs", d, "tmpfs", 0, "mode=0711"); err != nil {
				return fmt.Errorf("testenv: tmpfs on %s: %w", d, err)
			}
		}
	}
	if err := e.writeCNIConfig(); err != nil {
		return err
	}

	// Build podhost while containerd starts.
	built := make(chan struct{})
	go func() {
		defer close(built)
		if os.Getenv("PODHOST_TEST_SKIP_BUILD") != "" {
			e.PodhostBuildErr = errors.New("PODHOST_TEST_SKIP_BUILD is set")
			return
		}
		out := filepath.Join(e.Dir, "bin", "podhost")
		if err := BuildPodhost(ctx, e.RepoRoot, out); err != nil {
			e.PodhostBuildErr = err
			return
		}
		e.PodhostBin = out
		e.LogDriverBin = filepath.Join(filepath.Dir(out), LogDriverName)
	}()
	defer func() { <-built }()

	if err := e.writeContainerdConfig(); err != nil {
		return err
	}
	if err := e.startContainerd(ctx); err != nil {
		return err
	}
	if err := e.connect(ctx); err != nil {
		return err
	}
	snap, err := e.pickSnapshotter(ctx)
	if err != nil {
		return err
	}
	e.Snapshotter = snap
	return nil
}

// pickSubnet returns a /24 in 10.90.0.0/16 that no local interface uses.
func pickSubnet(seed int) string {
	used := map[string]bool{}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip4 := ipn.IP.To4(); ip4 != nil && ip4[0] == 10 && ip4[1] == 90 {
					used[strconv.Itoa(int(ip4[2]))] = true
				}
			}
		}
	}
	for i := 0; i < 256; i++ {
		x := strconv.Itoa((seed + i) % 256)
		if !used[x] {
			return "10.90." + x + ".0/24"
		}
	}
	return fmt.Sprintf("10.90.%d.0/24", seed%256)
}

// Client returns the Env's containerd client, with Namespace as its default
// namespace. It is shared and owned by the Env: do not Close it.
func (e *Env) Client() *client.Client {
	return e.client
}

// NewClient returns a new client of the private containerd (default
// namespace Namespace) that the caller must Close.
func (e *Env) NewClient(opts ...client.Opt) (*client.Client, error) {
	return client.New(e.Address, append([]client.Opt{client.WithDefaultNamespace(e.Namespace)}, opts...)...)
}

// Context returns ctx with the Env's containerd namespace.
func (e *Env) Context(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, e.Namespace)
}

// Close tears the Env down, whatever state the tests left it in: it
// deletes every task and container in every namespace of the private
// containerd, stops containerd (SIGTERM, then SIGKILL), runc-deletes and
// kills whatever is left (containers, shims connected to this containerd),
// CNI-DELs cached attachments, unmounts everything under Dir (deepest first,
// MNT_DETACH), removes CgroupPrefix in every cgroup hierarchy, deletes the
// CNI bridge and removes Dir. It is idempotent and safe to call
// concurrently (a signal handler and TestMain).
func (e *Env) Close() error {
	e.closeOnce.Do(func() { e.closeErr = e.close() })
	return e.closeErr
}

func (e *Env) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if e.client != nil {
		if e.ContainerdPID() != 0 {
			// The clean path. If it fails (containerd crashed, a shim hangs),
			// cleanup below removes what is left without containerd; only
			// its failures are errors.
			if err := e.removeAll(ctx); err != nil {
				fmt.Fprintf(os.Stderr, "testenv: close: deleting through containerd failed, falling back: %v\n", err)
			}
		}
		e.client.Close()
	}
	if err := e.stopContainerd(10 * time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := cleanup(ctx, &e.meta); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeAll deletes, through containerd, every task, container and image
// in every namespace of the private containerd (the clean path; cleanup
// handles what this misses).
func (e *Env) removeAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	nss, err := e.client.NamespaceService().List(ctx)
	if err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	var errs []error
	for _, ns := range nss {
		nctx := namespaces.WithNamespace(ctx, ns)
		ctrs, err := e.client.Containers(nctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range ctrs {
			if t, err := c.Task(nctx, nil); err == nil {
				if _, err := t.Delete(nctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("delete task %s/%s: %w", ns, c.ID(), err))
				}
			}
			if err := c.Delete(nctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
				// The snapshot may be gone already; delete the container alone.
				if err2 := c.Delete(nctx); err2 != nil && !errdefs.IsNotFound(err2) {
					errs = append(errs, fmt.Errorf("delete container %s/%s: %w", ns, c.ID(), err))
				}
			}
		}
	}
	return errors.Join(errs...)
}
