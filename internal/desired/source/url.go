package source

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

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
	URL        string
	Headers    map[string]string // sent with every request
	CAFile     string            // PEM bundle to verify the server with (default: the system's)
	ClientCert string            // PEM client certificate and key for mutual TLS
	ClientKey  string
	Period     time.Duration // poll period; default DefaultURLPeriod
	Timeout    time.Duration // per request; default DefaultURLTimeout
	// LastGood persists the last good content under the URL, so that a
	// podhost restarted while the server is down keeps the URL's pods.
	LastGood LastGood
	Logger   *slog.Logger
	Client   *http.Client // tests; default built from the TLS settings
}

// URLSource polls a URL serving a Pod, a v1 List or a multi-document
// YAML/JSON stream of Pods, ConfigMaps and Secrets. The last good content stays in effect while the URL
// fails or serves something invalid (a FileError names the URL and lists
// the pods kept): a server having a bad minute never removes pods. Only a
// good response without a pod does. The server's ETag is sent back as
// If-None-Match; a 304 keeps the current set.
type URLSource struct {
	cfg    URLConfig
	log    *slog.Logger
	client *http.Client

	etag    string
	data    []byte           // last good content, normalized to documents
	good    manifest.Objects // decoded from data
	lastErr error
}

// NewURL returns a URLSource; it fails on unreadable TLS files.
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
	u := &URLSource{cfg: cfg, log: cfg.Logger.With("component", "source", "url", cfg.URL), client: cfg.Client}
	if u.client == nil {
		tr, err := transport(cfg)
		if err != nil {
			return nil, err
		}
		u.client = &http.Client{Transport: tr, Timeout: cfg.Timeout}
	}
	return u, nil
}

func transport(cfg URLConfig) (*http.Transport, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("manifest URL CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("manifest URL CA file %s: no PEM certificate", cfg.CAFile)
		}
		tc.RootCAs = pool
	}
	if cfg.ClientCert != "" || cfg.ClientKey != "" {
		cert, err := tls.LoadX509KeyPair(cfg.ClientCert, cfg.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("manifest URL client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = tc
	return tr, nil
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
	s := Snapshot{Pods: slices.Clone(u.good.Pods), ConfigMaps: slices.Clone(u.good.ConfigMaps), Secrets: slices.Clone(u.good.Secrets)}
	if u.lastErr != nil {
		fe := FileError{File: u.cfg.URL, Err: u.lastErr}
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
		u.lastErr = fmt.Errorf("%s: %w", u.cfg.URL, err)
		return
	}
	if notModified {
		u.lastErr = nil
		return
	}
	data, err := normalize(body)
	if err == nil && bytes.Equal(data, u.data) && u.data != nil {
		u.etag, u.lastErr = etag, nil
		return
	}
	var objs manifest.Objects
	if err == nil {
		objs, err = decodeURL(u.cfg.URL, data)
	}
	if err != nil {
		u.lastErr = err
		u.etag = "" // refetch in full: the next good copy must not be a 304
		return
	}
	u.good, u.data, u.etag, u.lastErr = objs, data, etag, nil
	u.persist(data, len(objs.Secrets) > 0)
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
		err = u.cfg.LastGood.UpdateManifests(nil, []string{u.cfg.URL})
	} else {
		err = u.cfg.LastGood.UpdateManifests([]records.ManifestRecord{{Path: u.cfg.URL, Data: data}}, nil)
	}
	if err != nil {
		u.log.Warn("persist last good manifest URL content", "err", err)
	}
}

func (u *URLSource) fetch(ctx context.Context) (body []byte, etag string, notModified bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.cfg.URL, nil)
	if err != nil {
		return nil, "", false, err
	}
	for k, v := range u.cfg.Headers {
		req.Header.Set(k, v)
	}
	if u.etag != "" && u.data != nil {
		req.Header.Set("If-None-Match", u.etag)
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, "", false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && u.data != nil:
		return nil, "", true, nil
	case resp.StatusCode != http.StatusOK:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, "", false, fmt.Errorf("HTTP status %s", resp.Status)
	}
	body, err = manifest.ReadLimited(resp.Body, u.cfg.URL, -1)
	if err != nil {
		return nil, "", false, err
	}
	return body, resp.Header.Get("ETag"), false, nil
}

// decodeURL decodes and validates the URL's documents. An empty body is a
// good empty set.
func decodeURL(url string, data []byte) (manifest.Objects, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return manifest.Objects{}, nil
	}
	return manifest.DecodeObjects(url, data)
}

// normalize turns a v1 List of Pods into one JSON document per item; other
// content (a Pod, a multi-document stream) is returned as is.
func normalize(body []byte) ([]byte, error) {
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if !looksLikeList(body) || yaml.Unmarshal(body, &head) != nil || head.Kind != "List" {
		return body, nil
	}
	if head.APIVersion != "v1" {
		return nil, fmt.Errorf("a List of apiVersion %q: only v1 is supported", head.APIVersion)
	}
	docs := make([]string, 0, len(head.Items))
	for _, it := range head.Items {
		docs = append(docs, string(it))
	}
	return []byte(strings.Join(docs, "\n---\n")), nil
}

// looksLikeList is a cheap pre-check before parsing the whole body twice.
func looksLikeList(body []byte) bool {
	return bytes.Contains(body, []byte("List")) && bytes.Contains(body, []byte("items"))
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
	for _, r := range recs {
		if r.Path != u.cfg.URL {
			continue
		}
		objs, err := decodeURL(u.cfg.URL, r.Data)
		if err != nil {
			u.log.Warn("stored last good manifest URL content no longer decodes; ignored", "err", err)
			return
		}
		u.good, u.data = objs, r.Data
	}
}

// IsURLKey reports whether a stored last good key is a URL source's (the
// dir's scanner leaves those alone).
func IsURLKey(key string) bool { return strings.Contains(key, "://") }
