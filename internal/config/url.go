package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
)

// DefaultManifestURLPeriod is how often the manifest URL is polled.
const DefaultManifestURLPeriod = 20 * time.Second

// ManifestURL configures the HTTP manifest source (the kubelet's
// --manifest-url). Its pods join the manifest dir's; on a name clash the
// dir's pod wins and the URL's is reported as an error (source.Combine).
type ManifestURL struct {
	// ManifestURL is polled every ManifestURLPeriod for a Pod, a v1 List of
	// Pods or a multi-document stream ("" = no URL source); or, as
	// oci://REGISTRY/REPOSITORY:TAG, for a manifest artifact in Flux's
	// format, read through the hosts dir and auth files and verified under
	// imagePolicy (source.OCISource). Key manifestURL.
	ManifestURL string
	// ManifestURLAllowHTTP lets ManifestURL be http://: pods (and the
	// headers) then travel in clear text and anyone on the path can change
	// them. Off by default: an http:// URL is refused. Key
	// manifestURLAllowHTTP.
	ManifestURLAllowHTTP bool
	// ManifestURLHeaders are sent with each request. Key manifestURLHeaders.
	ManifestURLHeaders map[string]string
	// ManifestURLCAFile, ManifestURLClientCert, ManifestURLClientKey: PEM
	// files for https (server CA; client certificate and key).
	ManifestURLCAFile     string
	ManifestURLClientCert string
	ManifestURLClientKey  string
	ManifestURLPeriod     time.Duration
}

// manifestURLFile is ManifestURL's on-disk form (inlined in file).
type manifestURLFile struct {
	ManifestURL           *string           `json:"manifestURL"`
	ManifestURLAllowHTTP  *bool             `json:"manifestURLAllowHTTP"`
	ManifestURLHeaders    map[string]string `json:"manifestURLHeaders"`
	ManifestURLCAFile     *string           `json:"manifestURLCAFile"`
	ManifestURLClientCert *string           `json:"manifestURLClientCert"`
	ManifestURLClientKey  *string           `json:"manifestURLClientKey"`
	ManifestURLPeriod     *string           `json:"manifestURLPeriod"`
}

func (f *manifestURLFile) applyTo(m *ManifestURL) error {
	setString(&m.ManifestURL, f.ManifestURL)
	if f.ManifestURLAllowHTTP != nil {
		m.ManifestURLAllowHTTP = *f.ManifestURLAllowHTTP
	}
	if f.ManifestURLHeaders != nil {
		m.ManifestURLHeaders = f.ManifestURLHeaders
	}
	setString(&m.ManifestURLCAFile, f.ManifestURLCAFile)
	setString(&m.ManifestURLClientCert, f.ManifestURLClientCert)
	setString(&m.ManifestURLClientKey, f.ManifestURLClientKey)
	var err error
	m.ManifestURLPeriod, err = parseDuration("manifestURLPeriod", f.ManifestURLPeriod, m.ManifestURLPeriod)
	return err
}

func (m ManifestURL) validate() error {
	var errs []error
	switch {
	case strings.HasPrefix(m.ManifestURL, ociScheme):
		errs = append(errs, m.validateOCI())
	case m.ManifestURL != "":
		errs = append(errs, m.validateURL())
	}
	if m.ManifestURLPeriod <= 0 {
		errs = append(errs, fmt.Errorf("manifestURLPeriod: must be positive, got %s", m.ManifestURLPeriod))
	}
	if (m.ManifestURLClientCert == "") != (m.ManifestURLClientKey == "") {
		errs = append(errs, errors.New("manifestURLClientCert and manifestURLClientKey: set both or neither"))
	}
	for key, p := range map[string]string{"manifestURLCAFile": m.ManifestURLCAFile,
		"manifestURLClientCert": m.ManifestURLClientCert, "manifestURLClientKey": m.ManifestURLClientKey} {
		if p != "" && !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("%s: must be an absolute path, got %q", key, p))
		}
	}
	return errors.Join(errs...)
}

// validateURL checks ManifestURL without echoing it: it may carry
// credentials (user:password@, a token in the query).
func (m ManifestURL) validateURL() error {
	u, err := url.Parse(m.ManifestURL)
	var ue *url.Error
	switch {
	case errors.As(err, &ue):
		return fmt.Errorf("manifestURL: not a URL: %w", ue.Err)
	case err != nil:
		return errors.New("manifestURL: not a URL")
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("manifestURL: want an https:// URL with a host or oci://REGISTRY/REPOSITORY:TAG, got scheme %q", u.Scheme)
	case u.Scheme == "http" && !m.ManifestURLAllowHTTP:
		return errors.New("manifestURL: http:// sends the pods and manifestURLHeaders in clear text and lets anyone on the path change them: use https://, or set manifestURLAllowHTTP: true")
	}
	return nil
}

// ociScheme prefixes a manifest artifact (source.OCIScheme).
const ociScheme = "oci://"

// validateOCI checks an oci:// ManifestURL (its errors do not echo it): a registry, a repository and a
// tag or digest; the http settings are refused with it (the registry's TLS
// and credentials are the hosts dir's and the auth files', as for images).
func (m ManifestURL) validateOCI() error {
	var errs []error
	named, err := reference.ParseNamed(strings.TrimPrefix(m.ManifestURL, ociScheme))
	if err == nil {
		_, tagged := named.(reference.Tagged)
		_, digested := named.(reference.Digested)
		if !tagged && !digested {
			err = errors.New("no tag or digest")
		}
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("manifestURL: not an OCI reference: %w (want oci://REGISTRY/REPOSITORY:TAG)", err))
	}
	for key, set := range map[string]bool{"manifestURLAllowHTTP": m.ManifestURLAllowHTTP, "manifestURLHeaders": len(m.ManifestURLHeaders) > 0,
		"manifestURLCAFile": m.ManifestURLCAFile != "", "manifestURLClientCert": m.ManifestURLClientCert != "", "manifestURLClientKey": m.ManifestURLClientKey != ""} {
		if set {
			errs = append(errs, fmt.Errorf("%s: not used with an oci:// manifestURL (a registry's TLS and plain http are set in the hosts dir, its credentials in the auth files, as for images)", key))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
