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
		"manifestURL: ftp://h/x\n":                         "manifestURL: want an https:// URL with a host",
		"manifestURL: http://h/x\n":                        "manifestURL: http:// sends the pods and manifestURLHeaders in clear text",
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

// An http:// URL needs manifestURLAllowHTTP; errors never echo the URL,
// which may carry credentials.
func TestManifestURLAllowHTTPAndNoEcho(t *testing.T) {
	c, err := Parse([]byte("manifestURL: http://h/pods\nmanifestURLAllowHTTP: true\n"))
	if err != nil || !c.ManifestURLAllowHTTP {
		t.Fatalf("allowed http: %v, %+v", err, c.ManifestURL)
	}
	for _, in := range []string{"manifestURL: ftp://u:s3cret@h/x?token=s3cret\n", "manifestURL: \"https://u:s3cret@h/x\\x7f?token=s3cret\"\n",
		"manifestURL: http://u:s3cret@h/x?token=s3cret\n"} {
		_, err := Parse([]byte(in))
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) = %v: want an error without the credentials", in, err)
		}
	}
}

// manifestURL: oci:// is a manifest artifact; the http settings are
// refused with it, each named.
func TestManifestURLOCI(t *testing.T) {
	c, err := Parse([]byte("manifestURL: oci://registry.example:5000/fleet/pods:v1\nmanifestURLPeriod: 1m\n"))
	if err != nil || c.ManifestURL.ManifestURL != "oci://registry.example:5000/fleet/pods:v1" {
		t.Fatalf("parsed %v, %+v", err, c.ManifestURL)
	}
	for in, want := range map[string]string{
		"manifestURL: oci://registry.example/fleet/pods\n":                   "manifestURL: not an OCI reference: no tag or digest",
		"manifestURL: oci://u:s3cret@registry.example/pods:1\n":              "manifestURL: not an OCI reference",
		"manifestURL: oci://h.example/p:1\nmanifestURLAllowHTTP: true\n":     "manifestURLAllowHTTP: not used with an oci:// manifestURL",
		"manifestURL: oci://h.example/p:1\nmanifestURLHeaders: {A: b}\n":     "manifestURLHeaders: not used with an oci:// manifestURL",
		"manifestURL: oci://h.example/p:1\nmanifestURLCAFile: /etc/ca.pem\n": "manifestURLCAFile: not used with an oci:// manifestURL",
	} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) = %v, want %q", in, err, want)
		}
	}
}
