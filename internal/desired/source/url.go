package source

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// Defaults of URLConfig.
const (
	DefaultURLPeriod  = 20 * time.Second
	DefaultURLTimeout = 10 * time.Second
)

// URLConfig configures a URLSource (the kubelet's --manifest-url).
type URLConfig struct {
	URL string
	// AllowHTTP accepts an http:// URL; without it only https:// is.
	AllowHTTP  bool
	Headers    map[string]string // sent with every request, never to another host
	CAFile     string            // PEM bundle to verify the server with (default: the system's)
	ClientCert string            // PEM client certificate and key for mutual TLS
	ClientKey  string
	Period     time.Duration // poll period; default DefaultURLPeriod
	Timeout    time.Duration // per request; default DefaultURLTimeout
	// LastGood persists the last good content under the URL (redacted: see
	// RedactURL), so that a podhost restarted while the server is down
	// keeps the URL's pods.
	LastGood LastGood
	Logger   *slog.Logger
	// Client: tests; default built from the TLS settings. Its
	// CheckRedirect is replaced by the source's (same host, no downgrade).
	Client *http.Client
}

// URLSource polls a URL serving a Pod, a v1 List or a multi-document
// YAML/JSON stream of Pods, ConfigMaps and Secrets. The last good content
// stays in effect while the URL fails, serves something invalid, or a
// response that may be cut off (see complete and decodeURL); a FileError
// names the URL and lists the pods kept: a server having a bad minute
// never removes pods. Only a complete, valid response without a pod does.
// The server's ETag is sent back as If-None-Match; a 304 keeps the
// current set. The URL as shown (logs, errors, the config-source
// annotation, the state db key) is RedactURL's.
type URLSource struct {
	polled
	cfg    URLConfig
	client *http.Client
	etag   string
}

// NewURL returns a URLSource; it fails on an URL it refuses (not https://,
// or http:// without AllowHTTP) and on unreadable TLS files.
func NewURL(cfg URLConfig) (*URLSource, error) {
	if cfg.Period <= 0 {
		cfg.Period = DefaultURLPeriod
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultURLTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	target, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("manifest URL %s: not a URL", RedactURL(cfg.URL))
	}
	if err := checkScheme(target, cfg.AllowHTTP); err != nil {
		return nil, fmt.Errorf("manifest URL %s: %w", RedactURL(cfg.URL), err)
	}
	display := RedactURL(cfg.URL)
	u := &URLSource{cfg: cfg, polled: polled{display: display, what: "manifest URL", store: cfg.LastGood,
		log: cfg.Logger.With("component", "source", "url", display)}}
	u.decode = func(data []byte) (manifest.Objects, error) { return decodeURL(display, data) }
	var client http.Client
	if cfg.Client != nil {
		client = *cfg.Client
	} else {
		tr, err := transport(cfg)
		if err != nil {
			return nil, err
		}
		client = http.Client{Transport: tr, Timeout: cfg.Timeout}
	}
	client.CheckRedirect = redirectPolicy(cfg.AllowHTTP)
	u.client = &client
	return u, nil
}

// Run polls until ctx is done. It emits a snapshot after the first poll
// (the stored last good content stands in if that poll fails) and after
// each change. It returns nil when ctx is done.
func (u *URLSource) Run(ctx context.Context, out chan<- Snapshot) error {
	return u.run(ctx, out, u.cfg.Period, u.poll)
}

// poll fetches the URL once and updates the good set or lastErr.
func (u *URLSource) poll(ctx context.Context) {
	body, etag, notModified, err := u.fetch(ctx)
	if err != nil {
		u.lastErr = fmt.Errorf("%s: %w", u.display, err)
		return
	}
	if notModified {
		u.lastErr = nil
		return
	}
	if bytes.Equal(body, u.data) && u.data != nil {
		u.etag, u.lastErr = etag, nil
		return
	}
	objs, err := decodeURL(u.display, body)
	if err != nil {
		u.lastErr = err
		u.etag = "" // refetch in full: the next good copy must not be a 304
		return
	}
	u.etag = etag
	u.setGood(body, objs)
}

// IsURLKey reports whether a stored last good key is a URL source's (the
// dir's scanner leaves those alone).
func IsURLKey(key string) bool { return strings.Contains(key, "://") }
