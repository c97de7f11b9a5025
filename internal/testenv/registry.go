//go:build integration

package testenv

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"golang.org/x/crypto/bcrypt"
)

// Default credentials of a registry started with RegistryOptions.Htpasswd
// and no User/Password.
const (
	DefaultRegistryUser     = "podhost"
	DefaultRegistryPassword = "podhost-test-secret"
)

// RegistryOptions configure StartRegistry.
type RegistryOptions struct {
	// Htpasswd turns on basic auth (htpasswd, bcrypt) with one account,
	// User/Password (defaults DefaultRegistryUser/DefaultRegistryPassword).
	Htpasswd       bool
	User, Password string
}

// Credentials are registry credentials; the zero value means anonymous.
type Credentials struct{ User, Password string }

// Registry is a github.com/distribution/distribution/v3 registry serving
// plain HTTP on 127.0.0.1, started by StartRegistry.
type Registry struct {
	// Addr is "127.0.0.1:PORT", the registry host part of image refs.
	Addr string
	// Dir holds the config, the htpasswd file, the storage and Log.
	Dir string
	// Log is the registry's stdout+stderr.
	Log string
	// Creds are the account's credentials (zero without Htpasswd).
	Creds Credentials

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

var (
	registryBinOnce sync.Once
	registryBin     string
	registryBinErr  error
)

// RegistryBin returns the registry binary: $PODHOST_REGISTRY_BIN, else what
// <repo>/scripts/registry.sh prints (it builds the binary into CacheDir()
// once; later runs only check it). Once per process.
func RegistryBin(ctx context.Context) (string, error) {
	registryBinOnce.Do(func() { registryBin, registryBinErr = findRegistryBin(ctx) })
	return registryBin, registryBinErr
}

func findRegistryBin(ctx context.Context) (string, error) {
	bin := os.Getenv("PODHOST_REGISTRY_BIN")
	if bin == "" {
		var err error
		if bin, err = installScript(ctx, "registry.sh"); err != nil {
			return "", err
		}
	}
	if _, err := exec.LookPath(bin); err != nil {
		return "", fmt.Errorf("testenv: registry binary: %w", err)
	}
	return bin, nil
}

// installScript runs <repo>/scripts/<name> (an installer: idempotent,
// progress on stderr) and returns the last line it printed.
func installScript(ctx context.Context, name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", name))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("testenv: scripts/%s: %w", name, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1]), nil
}

// registryConfig is the registry's config.yml; %s: storage dir, extra
// (auth) section.
const registryConfig = `version: 0.1
log:
  level: info
  formatter: json
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:0
  secret: podhost-test-registry
%s`

// StartRegistry starts a registry on 127.0.0.1 (a port the kernel picks,
// read back from the registry's log) with its storage below dir, plain
// HTTP, optionally htpasswd auth, and waits until GET /v2/ answers (200, or
// 401 with auth). The registry dies with the test process (Pdeathsig);
// Close stops it. The caller removes dir.
func StartRegistry(ctx context.Context, dir string, opts RegistryOptions) (*Registry, error) {
	bin, err := RegistryBin(ctx)
	if err != nil {
		return nil, err
	}
	r := &Registry{Dir: dir, Log: filepath.Join(dir, "registry.log")}
	cfgPath, err := r.writeConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("testenv: registry: %w", err)
	}
	addrc, err := r.start(bin, cfgPath)
	if err != nil {
		return nil, fmt.Errorf("testenv: registry: %w", err)
	}
	if err := r.waitReady(ctx, addrc); err != nil {
		r.Close()
		return nil, fmt.Errorf("testenv: registry: %w; log %s:\n%s", err, r.Log, r.LogTail(20))
	}
	return r, nil
}

// writeConfig writes config.yml (and htpasswd) into r.Dir.
func (r *Registry) writeConfig(opts RegistryOptions) (string, error) {
	storage := filepath.Join(r.Dir, "storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return "", err
	}
	auth := ""
	if opts.Htpasswd {
		r.Creds = Credentials{User: opts.User, Password: opts.Password}
		if r.Creds.User == "" && r.Creds.Password == "" {
			r.Creds = Credentials{User: DefaultRegistryUser, Password: DefaultRegistryPassword}
		}
		if r.Creds.User == "" || strings.Contains(r.Creds.User, ":") {
			return "", fmt.Errorf("bad htpasswd user %q", r.Creds.User)
		}
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Creds.Password), bcrypt.MinCost)
		if err != nil {
			return "", fmt.Errorf("htpasswd: %w", err)
		}
		htpasswd := filepath.Join(r.Dir, "htpasswd")
		if err := os.WriteFile(htpasswd, []byte(r.Creds.User+":"+string(hash)+"\n"), 0o600); err != nil {
			return "", err
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: podhost-test\n    path: %s\n", htpasswd)
	}
	cfgPath := filepath.Join(r.Dir, "config.yml")
	err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(registryConfig, storage, auth)), 0o644)
	return cfgPath, err
}

// start runs the registry; the returned channel gets the address it
// listens on, read from its log (closed if it never says).
func (r *Registry) start(bin, cfgPath string) (<-chan string, error) {
	logf, err := os.OpenFile(r.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", cfgPath)
	// No REGISTRY_* overrides from the caller's environment; no trace
	// exporter trying to reach an OTLP collector.
	cmd.Env = append(dropEnvPrefix(os.Environ(), "REGISTRY_", "OTEL_"), "OTEL_TRACES_EXPORTER=none")
	cmd.Dir = r.Dir
	cmd.Stdout = logf
	// Own process group: ^C reaches only the test binary. Pdeathsig: the
	// registry dies with the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	addrc := make(chan string, 1)
	started := make(chan error, 1)
	r.exited = make(chan struct{})
	go func() {
		defer logf.Close()
		// Pdeathsig fires when the *thread* that forked exits: keep this
		// goroutine on its thread while the registry runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		scanLog(stderr, logf, addrc) // until the registry exits
		r.waitErr = cmd.Wait()
		close(r.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	r.cmd = cmd
	return addrc, nil
}

// scanLog copies the registry's log lines to w and sends the address of
// its first "listening on ADDR" line to addrc, which it closes at EOF.
func scanLog(rd io.Reader, w io.Writer, addrc chan<- string) {
	defer close(addrc)
	sent := false
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		fmt.Fprintf(w, "%s\n", line)
		if sent {
			continue
		}
		var entry struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(line, &entry) == nil && strings.HasPrefix(entry.Msg, "listening on ") {
			addrc <- strings.TrimSpace(strings.TrimPrefix(entry.Msg, "listening on "))
			sent = true
		}
	}
	_, _ = io.Copy(w, rd) // a line too long for the scanner: keep draining
}

// waitReady waits for the listening address, then for GET /v2/.
func (r *Registry) waitReady(ctx context.Context, addrc <-chan string) error {
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case addr, ok := <-addrc:
		if !ok {
			<-r.exited
			return fmt.Errorf("exited during startup (%v)", r.waitErr)
		}
		r.Addr = addr
	case <-timeout.C:
		return errors.New(`no "listening on" in its log within 30s`)
	case <-ctx.Done():
		return ctx.Err()
	}
	if !strings.HasPrefix(r.Addr, "127.0.0.1:") {
		return fmt.Errorf("listening on %q, want 127.0.0.1:PORT", r.Addr)
	}
	// The socket is bound before the line is logged: connections wait in
	// the backlog until the server accepts them.
	want := http.StatusOK
	if r.Creds.User != "" {
		want = http.StatusUnauthorized
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	code, err := r.get(rctx, "/v2/")
	if err != nil {
		return err
	}
	if code != want {
		return fmt.Errorf("GET /v2/: status %d, want %d", code, want)
	}
	return nil
}

func (r *Registry) get(ctx context.Context, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Close stops the registry (SIGTERM to its PID, SIGKILL after 10s). It is
// idempotent.
func (r *Registry) Close() error {
	r.closeOnce.Do(func() {
		if r.cmd == nil {
			return
		}
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case <-r.exited:
		case <-t.C:
			_ = r.cmd.Process.Kill()
			<-r.exited
			r.closeErr = errors.New("testenv: registry ignored SIGTERM; killed")
		}
	})
	return r.closeErr
}

// LogTail returns the last n lines of the registry's log.
func (r *Registry) LogTail(n int) string { return fileTail(r.Log, n) }

// fileTail is the last n lines of a file ("" if it cannot be read).
func fileTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Ref returns the full image ref of repoTag ("podhost/busybox:1") in this
// registry.
func (r *Registry) Ref(repoTag string) string { return r.Addr + "/" + repoTag }

// WriteDockerConfig writes a docker config.json to path with credentials
// for host ({"auths": {host: {"auth": base64(user:password)}}}), atomically
// (temp file + rename: a daemon re-reading it never sees half a file).
func WriteDockerConfig(path, host string, creds Credentials) error {
	cfg := map[string]any{"auths": map[string]any{
		host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(creds.User + ":" + creds.Password))},
	}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// PushImage pushes localRef, an image in containerd (in ctx's namespace,
// else c's default), to remoteRef ("127.0.0.1:PORT/repo:tag") over plain
// HTTP with creds (zero: anonymous). The local image is not retagged.
func PushImage(ctx context.Context, c *client.Client, localRef, remoteRef string, creds Credentials) error {
	img, err := c.ImageService().Get(ctx, localRef)
	if err != nil {
		return fmt.Errorf("testenv: push %s: %w", localRef, err)
	}
	if err := c.Push(ctx, remoteRef, img.Target, client.WithResolver(pushResolver(ctx, creds))); err != nil {
		return fmt.Errorf("testenv: push %s as %s: %w", localRef, remoteRef, err)
	}
	return nil
}

// pushResolver resolves test registries over plain HTTP with creds.
func pushResolver(ctx context.Context, creds Credentials) remotes.Resolver {
	hosts := config.ConfigureHosts(ctx, config.HostOptions{
		DefaultScheme: "http",
		Credentials: func(string) (string, string, error) {
			return creds.User, creds.Password, nil
		},
	})
	return docker.NewResolver(docker.ResolverOptions{Hosts: hosts})
}

func dropEnvPrefix(env []string, prefixes ...string) []string {
	out := env[:0:0]
outer:
	for _, kv := range env {
		for _, p := range prefixes {
			if strings.HasPrefix(kv, p) {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}
