package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config file holding manifestURLHeaders, or an auth file, readable by
// group or others is reported; 0600 ones and a config without
// credentials are not.
func TestExposedCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	auth := write("auth.json", `{"auths":{}}`, 0o644)
	cases := []struct {
		name, content string
		mode          os.FileMode
		want          []string
	}{
		{"token 0644", "manifestURL: https://h/p\nmanifestURLHeaders: {Authorization: Bearer x}\n", 0o644, []string{"holds manifestURL credentials", "(mode 0644)"}},
		{"token in the query 0640", "manifestURL: https://h/p?token=x\n", 0o640, []string{"holds manifestURL credentials", "(mode 0640)"}},
		{"token 0600", "manifestURL: https://h/p\nmanifestURLHeaders: {Authorization: Bearer x}\n", 0o600, nil},
		{"no credentials 0644", "manifestURL: https://h/p\n", 0o644, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(write("config.yaml", tc.content+"authFiles: []\n", tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Join(c.ExposedCredentials(), "\n")
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want it to contain %q", got, w)
				}
			}
			if tc.want == nil && got != "" {
				t.Errorf("got %q, want nothing", got)
			}
		})
	}
	c := Default()
	c.AuthFiles = []string{auth, filepath.Join(dir, "missing.json")}
	if got := c.ExposedCredentials(); len(got) != 1 || !strings.Contains(got[0], auth+" holds registry credentials") {
		t.Errorf("auth files: %q", got)
	}
}
