package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/podhost/podhost/internal/desired/manifest"
)

// maxRedirects is how many same-host redirects a poll follows (net/http's
// default).
const maxRedirects = 10

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

// checkScheme accepts https:// URLs, and http:// ones when allowHTTP.
func checkScheme(u *url.URL, allowHTTP bool) error {
	switch {
	case u.Host == "":
		return errors.New("no host")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && allowHTTP:
		return nil
	case u.Scheme == "http":
		return errors.New("http:// refused (clear text; set manifestURLAllowHTTP: true to allow it)")
	}
	return fmt.Errorf("scheme %q refused: want https://", u.Scheme)
}

// redirectPolicy follows a redirect only to the URL's own host, never from
// https to http: the request's headers (manifestURLHeaders, credentials of
// the URL) are for that host only, and a downgrade would let anyone on the
// path serve the pods. An http URL (allowHTTP) may be upgraded to https on
// the same host name.
func redirectPolicy(allowHTTP bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		from, to := via[0].URL, req.URL
		if from.Scheme == "https" && to.Scheme != "https" {
			return fmt.Errorf("redirect from https to %s refused", to.Scheme)
		}
		if err := checkScheme(to, allowHTTP); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		sameHost := strings.EqualFold(from.Hostname(), to.Hostname())
		if !sameHost || from.Scheme == to.Scheme && effectivePort(from) != effectivePort(to) {
			return fmt.Errorf("redirect to another host (%s) refused: the URL's headers and credentials are for %s only", to.Host, from.Host)
		}
		return nil
	}
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// RedactURL is raw as podhost shows it (logs, errors, the config-source
// annotation, `get -o wide`, the state db key): without the user info
// (user:password@ becomes REDACTED@), every query value replaced by
// REDACTED (a token in the query), no fragment. Credentials in the path
// cannot be told from a path and are shown.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an invalid URL)"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		u.RawQuery = q.Encode()
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// plainErr drops the URL net/http puts in its errors (it strips a password,
// not a query token): the caller names the URL, redacted.
func plainErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// framed reports whether the response says where its body ends, so that a
// body cut off by a dropped connection is an error, not a shorter
// manifest: a Content-Length (net/http fails a shorter body with
// io.ErrUnexpectedEOF), chunked encoding (a missing last chunk is an
// error), HTTP/2 (END_STREAM), or gzip the transport decompressed (its
// trailer checks length and CRC). A body that only the connection's close
// ends (HTTP/1.0 style) could have been cut anywhere.
func framed(resp *http.Response) bool {
	return resp.ContentLength >= 0 || slices.Contains(resp.TransferEncoding, "chunked") || resp.ProtoMajor >= 2 || resp.Uncompressed
}

func (u *URLSource) fetch(ctx context.Context) (body []byte, etag string, notModified bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.cfg.URL, nil)
	if err != nil {
		return nil, "", false, errors.New("cannot make a request of the URL")
	}
	for k, v := range u.cfg.Headers {
		req.Header.Set(k, v)
	}
	if u.etag != "" && u.data != nil {
		req.Header.Set("If-None-Match", u.etag)
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, "", false, plainErr(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && u.data != nil:
		return nil, "", true, nil
	case resp.StatusCode != http.StatusOK:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, "", false, fmt.Errorf("HTTP status %s", resp.Status)
	case !framed(resp):
		return nil, "", false, errors.New("response without Content-Length or chunked encoding: a cut-off body could not be told from a complete one")
	}
	body, err = manifest.ReadLimited(resp.Body, "response", -1)
	if err != nil {
		return nil, "", false, plainErr(err)
	}
	return body, resp.Header.Get("ETag"), false, nil
}
