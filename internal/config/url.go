package config

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"
)

// DefaultManifestURLPeriod is how often the manifest URL is polled.
const DefaultManifestURLPeriod = 20 * time.Second

// ManifestURL configures the HTTP manifest source (the kubelet's
// --manifest-url). Its pods join the manifest dir's; on a name clash the
// dir's pod wins and the URL's is reported as an error (source.Combine).
type ManifestURL struct {
	// ManifestURL is polled every ManifestURLPeriod for a Pod, a v1 List of
	// Pods or a multi-document stream ("" = no URL source). Key manifestURL.
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
	if m.ManifestURL != "" {
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
		return fmt.Errorf("manifestURL: want an https:// URL with a host, got scheme %q", u.Scheme)
	case u.Scheme == "http" && !m.ManifestURLAllowHTTP:
		return errors.New("manifestURL: http:// sends the pods and manifestURLHeaders in clear text and lets anyone on the path change them: use https://, or set manifestURLAllowHTTP: true")
	}
	return nil
}
