package source

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
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
	cfg     URLConfig
	display string // the URL without credentials
	log     *slog.Logger
	client  *http.Client

	etag    string
	data    []byte           // last good response body
	good    manifest.Objects // decoded from data
	lastErr error
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
	u := &URLSource{cfg: cfg, display: RedactURL(cfg.URL)}
	u.log = cfg.Logger.With("component", "source", "url", u.display)
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
	u.loadStored()
	t := time.NewTicker(u.cfg.Period)
	defer t.Stop()
	sent := ""
	for {
		u.poll(ctx)
		snap := u.snapshot()
		if key := snap.key(); key != sent || sent == "" {
			select {
			case out <- snap:
				sent = key
			case <-ctx.Done():
				return nil
			}
			if snap.Errors != nil {
				u.log.Warn("manifest URL failed; keeping the last good pods", "err", u.lastErr, "pods", len(snap.Pods))
			} else {
				u.log.Info("manifest URL changed", "pods", len(snap.Pods))
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (u *URLSource) snapshot() Snapshot {
	s := Snapshot{Pods: slices.Clone(u.good.Pods), ConfigMaps: slices.Clone(u.good.ConfigMaps), Secrets: slices.Clone(u.good.Secrets),
		Services: slices.Clone(u.good.Services), ServiceAccounts: slices.Clone(u.good.ServiceAccounts)}
	if u.lastErr != nil {
		fe := FileError{File: u.display, Err: u.lastErr}
		for _, p := range u.good.Pods {
			fe.Kept = append(fe.Kept, manifest.FullName(p))
		}
		s.Errors = []FileError{fe}
	}
	return s
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
	u.good, u.data, u.etag, u.lastErr = objs, body, etag, nil
	u.persist(body, len(objs.Secrets) > 0)
}

// persist stores the last good content, as the dir's scanner does a file:
// content holding a Secret is never stored (Secret values must not reach
// the disk) and replaces an older stored copy by none; its pods then last
// across a podhost restart only while the URL answers.
func (u *URLSource) persist(data []byte, hasSecret bool) {
	if u.cfg.LastGood == nil {
		return
	}
	var err error
	if hasSecret {
		err = u.cfg.LastGood.UpdateManifests(nil, []string{u.display})
	} else {
		err = u.cfg.LastGood.UpdateManifests([]records.ManifestRecord{{Path: u.display, Data: data}}, nil)
	}
	if err != nil {
		u.log.Warn("persist last good manifest URL content", "err", err)
	}
}

// loadStored takes the persisted last good content of the URL, if any.
func (u *URLSource) loadStored() {
	if u.cfg.LastGood == nil || u.data != nil {
		return
	}
	recs, err := u.cfg.LastGood.ListManifests()
	if err != nil {
		u.log.Error("read last good manifest URL content", "err", err)
		return
	}
	var stale []string
	for _, r := range recs {
		if IsURLKey(r.Path) && r.Path != u.display {
			stale = append(stale, r.Path) // another URL's, or this one's before redaction (it may hold credentials)
		}
		if r.Path != u.display {
			continue
		}
		objs, err := decodeURL(u.display, r.Data)
		if err != nil {
			u.log.Warn("stored last good manifest URL content no longer decodes; ignored", "err", err)
			continue
		}
		u.good, u.data = objs, r.Data
	}
	if len(stale) > 0 {
		if err := u.cfg.LastGood.UpdateManifests(nil, stale); err != nil {
			u.log.Warn("remove stale manifest URL content", "err", err)
		}
	}
}

// IsURLKey reports whether a stored last good key is a URL source's (the
// dir's scanner leaves those alone).
func IsURLKey(key string) bool { return strings.Contains(key, "://") }
