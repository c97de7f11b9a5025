package config

import (
	"strings"
	"testing"
	"time"
)

func TestManifestURL(t *testing.T) {
	c, err := Parse([]byte("manifestURL: https://h/pods\nmanifestURLHeaders: {X-A: b}\nmanifestURLPeriod: 5s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ManifestURL.ManifestURL != "https://h/pods" || c.ManifestURLHeaders["X-A"] != "b" || c.ManifestURLPeriod != 5*time.Second {
		t.Fatalf("parsed %+v", c.ManifestURL)
	}
	if d := Default(); d.ManifestURLPeriod != DefaultManifestURLPeriod || d.ManifestURL.ManifestURL != "" {
		t.Fatalf("defaults %+v", d.ManifestURL)
	}
	for in, want := range map[string]string{
		"manifestURL: ftp://h/x\n":                         "manifestURL: want an http:// or https:// URL",
		"manifestURLPeriod: 0s\n":                          "manifestURLPeriod: must be positive",
		"manifestURLClientCert: /c.pem\n":                  "set both or neither",
		"manifestURLCAFile: ca.pem\n":                      "manifestURLCAFile: must be an absolute path",
		"manifestURL: https://h/x\nmanifestURLPeriod: x\n": "manifestURLPeriod: time: invalid duration",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}
