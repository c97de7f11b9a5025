package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInputOneLine: a bad command line, config or kubeconfig is one
// line naming the file and the field, exit code 1, and nothing is
// contacted (no daemon socket, no API server exist here).
func TestBadInputOneLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	standalone := write("standalone.yaml", "maxPods: 10\n")
	missing := write("missing.yaml", "cluster: {kubeconfig: "+filepath.Join(dir, "absent.kubeconfig")+"}\n")
	relative := write("relative.yaml", "cluster: {kubeconfig: cluster.kubeconfig}\n")
	garbage := write("garbage.kubeconfig", "{{{ not yaml")
	bad := write("bad.yaml", "cluster: {kubeconfig: "+garbage+"}\n")
	kc := write("good.kubeconfig", `{apiVersion: v1, kind: Config, current-context: x, clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}],
users: [{name: u, user: {token: t}}], contexts: [{name: x, context: {cluster: c, user: u}}]}`)
	noCA := write("noca.yaml", "cluster: {kubeconfig: "+kc+", clientCAFile: "+filepath.Join(dir, "absent-ca.crt")+"}\n")
	badCA := write("badca.yaml", "cluster: {kubeconfig: "+kc+", clientCAFile: "+garbage+"}\n")
	badCert := write("badcert.yaml", "cluster: {kubeconfig: "+kc+", tlsCertFile: "+garbage+", tlsPrivateKeyFile: "+garbage+"}\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string // in the one line
	}{
		{"unknown flag", []string{"--bogus"}, []string{"unknown flag: --bogus"}},
		{"argument", []string{"join"}, []string{`unexpected argument "join"`}},
		{"absent config", []string{"--config", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml"}},
		{"standalone", []string{"--config", standalone}, []string{standalone, "cluster.kubeconfig is not set"}},
		{"kubeconfig absent", []string{"--config", missing}, []string{"cluster.kubeconfig", "absent.kubeconfig"}},
		{"kubeconfig relative", []string{"--config", relative}, []string{relative, "cluster.kubeconfig: must be an absolute path"}},
		{"kubeconfig garbage", []string{"--config", bad}, []string{"cluster.kubeconfig", garbage}},
		{"client CA absent", []string{"--config", noCA}, []string{noCA, "cluster.clientCAFile", "absent-ca.crt"}},
		{"client CA garbage", []string{"--config", badCA}, []string{badCA, "cluster.clientCAFile", garbage}},
		{"serving certificate garbage", []string{"--config", badCert}, []string{badCert, "cluster.tlsCertFile", garbage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stderr)
			out := stderr.String()
			if code != 1 {
				t.Errorf("exit code %d, want 1; stderr %q", code, out)
			}
			if strings.Count(out, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stderr %q does not name %q", out, w)
				}
			}
		})
	}
}
