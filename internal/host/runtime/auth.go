package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"

	"github.com/podhost/podhost/internal/model/runtimeapi"
)

// DefaultAuthFiles are podhost's own auth file, then root's (or $HOME's)
// docker config.json.
func DefaultAuthFiles() []string {
	files := []string{"/etc/podhost/auth.json"}
	if home, err := os.UserHomeDir(); err == nil && home != "/root" {
		files = append(files, filepath.Join(home, ".docker", "config.json"))
	}
	return append(files, "/root/.docker/config.json")
}

// dockerConfig is the part of docker's config.json podhost reads.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Auth          string `json:"auth"` // base64("user:password")
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
}

// Registry reaches registries as podhost's pulls do: through HostsDir
// (hosts.toml mirrors, certificates, plain http) with the credentials of
// AuthFiles. It needs no containerd: `manifests push` uses it alone; a
// Runtime uses its own settings (Runtime.Registry).
type Registry struct {
	HostsDir  string   // "": no hosts dir (containerd's defaults)
	AuthFiles []string // searched in order; nil: none
	Logger    *slog.Logger
}

// Registry is the Runtime's registry settings.
func (r *Runtime) Registry() Registry {
	return Registry{HostsDir: r.HostsDir, AuthFiles: r.AuthFiles, Logger: r.log()}
}

func (r *Runtime) resolver(ctx context.Context) remotes.Resolver { return r.Registry().resolver(ctx) }

func (r *Runtime) credentials(host string) (string, string, error) {
	return r.Registry().credentials(host)
}

// resolver builds a docker resolver honouring HostsDir (hosts.toml / certs)
// and AuthFiles, and a pod's pull secrets first (runtimeapi.PullAuth).
// Plain HTTP: containerd's defaults already use http (with an https
// attempt first) for localhost/127.0.0.1 registries with a port; other
// registries need a hosts.toml.
func (g Registry) resolver(ctx context.Context) remotes.Resolver {
	creds := g.credentials
	if pod := runtimeapi.PullAuth(ctx); len(pod) > 0 {
		creds = func(host string) (string, string, error) {
			for _, data := range pod {
				if user, secret, ok, err := authFrom(data, host); err == nil && ok {
					return user, secret, nil
				}
			}
			return g.credentials(host)
		}
	}
	opts := config.HostOptions{Credentials: creds}
	if g.HostsDir != "" {
		opts.HostDir = config.HostDirFromRoot(g.HostsDir)
	}
	return docker.NewResolver(docker.ResolverOptions{Hosts: config.ConfigureHosts(ctx, opts)})
}

// credentials returns the first matching credentials in AuthFiles for the
// registry host being contacted. Files are re-read on every call so edits
// apply without a restart; unreadable files are skipped with a warning.
func (g Registry) credentials(host string) (string, string, error) {
	for _, file := range g.AuthFiles {
		user, secret, ok, err := lookupAuth(file, host)
		if err != nil {
			g.log().Warn("registry auth file ignored", "file", file, "err", err)
			continue
		}
		if ok {
			return user, secret, nil
		}
	}
	return "", "", nil
}

func (g Registry) log() *slog.Logger {
	if g.Logger != nil {
		return g.Logger
	}
	return slog.Default()
}

// lookupAuth finds host in one docker config file.
func lookupAuth(file, host string) (user, secret string, ok bool, err error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	return authFrom(data, host)
}

// authFrom finds host in one docker config document.
func authFrom(data []byte, host string) (user, secret string, ok bool, err error) {
	var cfg dockerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", "", false, fmt.Errorf("parse: %w", err)
	}
	want := hostAliases(host)
	for key, a := range cfg.Auths {
		if !want[normalizeAuthKey(key)] {
			continue
		}
		user, secret, err := a.decode()
		if err != nil {
			return "", "", false, fmt.Errorf("auths[%q]: %w", key, err)
		}
		return user, secret, true, nil
	}
	return "", "", false, nil
}

// decode returns (user, password), or ("", token) for an identity token
// (containerd's authorizer treats a secret without user as refresh token).
func (a dockerAuth) decode() (string, string, error) {
	if a.IdentityToken != "" {
		return "", a.IdentityToken, nil
	}
	if a.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a.Auth))
		if err != nil {
			return "", "", fmt.Errorf("auth: %w", err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return "", "", errors.New("auth: not user:password")
		}
		return user, pass, nil
	}
	return a.Username, a.Password, nil
}

// normalizeAuthKey turns "https://index.docker.io/v1/" into
// "index.docker.io".
func normalizeAuthKey(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	return strings.ToLower(host)
}

// hostAliases are the auth keys that apply to a registry endpoint host.
func hostAliases(host string) map[string]bool {
	host = strings.ToLower(host)
	m := map[string]bool{host: true}
	switch host {
	case "registry-1.docker.io", "index.docker.io", "docker.io":
		m["registry-1.docker.io"], m["index.docker.io"], m["docker.io"] = true, true, true
	}
	return m
}
