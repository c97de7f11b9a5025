package openapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/munnerz/goautoneg"
)

// Media types, as kube-openapi's handlers (pkg/handler, pkg/handler3).
const (
	mimeJSON = "application/json"
	// client-go asks for v2 in the first form; both are answered with the
	// second.
	mimeV2ProtobufDeprecated = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mimeV2Protobuf           = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// Handler serves GET (and HEAD) of
//
//	/openapi/v2                    JSON, or protobuf for Accept: application/com.github.proto-openapi.spec.v2[@.]v1.0+protobuf
//	/openapi/v3                    the index of the v3 documents, each URL with ?hash=<SHA-512 of the document>
//	/openapi/v3/<path>[?hash=…]    a v3 document: with the current hash, cacheable forever
//	                               (Cache-Control: public, immutable); with another, a 301 to the
//	                               current one; without, Cache-Control: no-cache, private
//
// with the document's hash as ETag (If-None-Match → 304), gzipped when the
// client accepts gzip; anything else under /openapi/ is a 404.
func Handler() http.Handler { return http.HandlerFunc(serve) }

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == "/openapi/v2":
		serveV2(w, r)
	case p == "/openapi/v3":
		serveDoc(w, r, "v3.json", "v3.json", mimeJSON)
	case strings.HasPrefix(p, "/openapi/v3/"):
		serveV3(w, r, strings.TrimPrefix(p, "/openapi/v3/"))
	default:
		http.NotFound(w, r)
	}
}

func serveV2(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	switch negotiate(r, mimeJSON, mimeV2ProtobufDeprecated, mimeV2Protobuf) {
	case mimeJSON:
		serveDoc(w, r, "v2.json", "v2.json", mimeJSON)
	case mimeV2ProtobufDeprecated, mimeV2Protobuf:
		// The ETag is the JSON's, as kube-openapi's (Vary: Accept tells them apart).
		serveDoc(w, r, "v2.pb", "v2.json", mimeV2Protobuf)
	default:
		w.WriteHeader(http.StatusNotAcceptable)
	}
}

func serveV3(w http.ResponseWriter, r *http.Request, path string) {
	name := "v3/" + path + ".json"
	f, ok, err := lookup(name)
	switch {
	case err != nil:
		internalError(w, r, err)
		return
	case !ok || path == "":
		http.NotFound(w, r)
		return
	}
	w.Header().Add("Vary", "Accept")
	if negotiate(r, mimeJSON) == "" {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	if hash := r.URL.Query().Get("hash"); hash != "" {
		if hash != f.hash {
			http.Redirect(w, r, serverRelativeURL(path, f.hash), http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
	}
	serveDoc(w, r, name, name, mimeJSON)
}

// serverRelativeURL is the v3 index's URL of path, as kube-openapi's.
func serverRelativeURL(path, hash string) string {
	return (&url.URL{Path: "/openapi/v3/" + path, RawQuery: url.Values{"hash": {hash}}.Encode()}).String()
}

// serveDoc writes the embedded document name, with the hash of the
// document etagOf as ETag.
func serveDoc(w http.ResponseWriter, r *http.Request, name, etagOf, contentType string) {
	f, err := doc(name)
	if err != nil {
		internalError(w, r, err)
		return
	}
	e, err := doc(etagOf)
	if err != nil {
		internalError(w, r, err)
		return
	}
	h := w.Header()
	etag := strconv.Quote(e.hash)
	h.Set("Etag", etag)
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache, private")
	}
	h.Add("Vary", "Accept-Encoding")
	if inm := r.Header.Get("If-None-Match"); inm == "*" || strings.Contains(inm, etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", contentType)
	if acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		h.Set("Content-Length", strconv.Itoa(len(f.gz)))
		w.Write(f.gz) //nolint:errcheck // the client went away
		return
	}
	zr, err := f.open()
	if err != nil {
		internalError(w, r, err)
		return
	}
	defer zr.Close()
	h.Set("Content-Length", strconv.FormatInt(f.size(), 10))
	io.Copy(w, zr) //nolint:errcheck // the client went away (a corrupt file is the tests' to catch)
}

func internalError(w http.ResponseWriter, r *http.Request, err error) {
	slog.ErrorContext(r.Context(), "openapi: serving a document", "path", r.URL.Path, "err", err)
	http.Error(w, "internal error", http.StatusInternalServerError)
}

// negotiate is the first of offers the Accept header admits (kube-openapi's
// order: the clauses by preference, and for each the offers in order), ""
// if none. No Accept admits anything.
func negotiate(r *http.Request, offers ...string) string {
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, c := range goautoneg.ParseAccept(accept) {
		for _, o := range offers {
			typ, sub, _ := strings.Cut(o, "/")
			if (c.Type == typ || c.Type == "*") && (c.SubType == sub || c.SubType == "*") {
				return o
			}
		}
	}
	return ""
}

// acceptsGzip: the Accept-Encoding header admits gzip: named with a
// non-zero quality, or not named and * admitted.
func acceptsGzip(r *http.Request) bool {
	gzipQ, anyQ := -1.0, -1.0
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, part := range strings.Split(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			q := 1.0
			if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
			switch strings.ToLower(strings.TrimSpace(coding)) {
			case "gzip", "x-gzip":
				gzipQ = q
			case "*":
				anyQ = q
			}
		}
	}
	return gzipQ > 0 || gzipQ < 0 && anyQ > 0
}
