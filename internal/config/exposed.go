package config

import (
	"fmt"
	"net/url"
	"os"
)

// HoldsCredentials reports whether the configuration carries secrets:
// manifestURLHeaders (a bearer token, typically), or a manifestURL with
// user info or a query (a token in it).
func (c *Config) HoldsCredentials() bool {
	if len(c.ManifestURLHeaders) > 0 {
		return true
	}
	u, err := url.Parse(c.ManifestURL.ManifestURL)
	return err == nil && (u.User != nil || u.RawQuery != "")
}

// ExposedCredentials lists the files holding credentials that users other
// than root may read (group or others have read permission): the config
// file when it HoldsCredentials (scripts/install.sh installs it 0600) and
// each existing authFiles entry (registry credentials) and the cluster's
// kubeconfig. One line each,
// naming the file, its mode and the fix; the daemon logs them as
// warnings and `podhost check` reports them.
func (c *Config) ExposedCredentials() []string {
	var out []string
	if c.Source != "" && c.HoldsCredentials() {
		if line := exposed(c.Source, "holds manifestURL credentials"); line != "" {
			out = append(out, line)
		}
	}
	if c.Cluster.Kubeconfig != "" {
		if line := exposed(c.Cluster.Kubeconfig, "holds the node's cluster credentials (cluster.kubeconfig)"); line != "" {
			out = append(out, line)
		}
	}
	for _, f := range c.AuthFiles {
		if line := exposed(f, "holds registry credentials (authFiles)"); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// exposed describes path when group or others can read it ("" otherwise,
// or when it cannot be read).
func exposed(path, what string) string {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o044 == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s and is readable by group or others (mode %04o): chmod 600 %s", path, what, st.Mode().Perm(), path)
}
