package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

const (
	mimeV2Protobuf = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	// hashParam is the query parameter of the v3 index's URLs.
	hashParam = "hash"
)

// documents are the generated files: name (relative to the output dir,
// without .gz) → content.
type documents map[string][]byte

// fetch gets every document from the server's handler: the v3 index and
// each document it lists (checking that its hash is the SHA-512 of the
// bytes, as the runtime serves it), and v2 as JSON and as protobuf.
func fetch(h http.Handler) (documents, map[string][]byte, error) {
	out := documents{}
	index, err := get(h, "/openapi/v3", "application/json")
	if err != nil {
		return nil, nil, err
	}
	out["v3.json"] = index
	var idx struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		return nil, nil, fmt.Errorf("v3 index: %w", err)
	}
	v3 := map[string][]byte{}
	for _, p := range slices.Sorted(maps.Keys(idx.Paths)) {
		u, err := url.Parse(idx.Paths[p].ServerRelativeURL)
		if err != nil || u.Path != "/openapi/v3/"+p {
			return nil, nil, fmt.Errorf("v3 index: %s: unexpected URL %q", p, idx.Paths[p].ServerRelativeURL)
		}
		doc, err := get(h, u.String(), "application/json")
		if err != nil {
			return nil, nil, err
		}
		if sum := fmt.Sprintf("%X", sha512.Sum512(doc)); sum != u.Query().Get(hashParam) {
			return nil, nil, fmt.Errorf("v3 %s: hash %s in the index, %s served", p, u.Query().Get(hashParam), sum)
		}
		out["v3/"+p+".json"] = doc
		v3[p] = doc
	}
	if out["v2.json"], err = get(h, "/openapi/v2", "application/json"); err != nil {
		return nil, nil, err
	}
	if out["v2.pb"], err = get(h, "/openapi/v2", mimeV2Protobuf); err != nil {
		return nil, nil, err
	}
	return out, v3, nil
}

func get(h http.Handler, path, accept string) ([]byte, error) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept", accept)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("GET %s (%s): %d %s", path, accept, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	return rec.Body.Bytes(), nil
}

// write puts each document into dir as name.gz, and SHA512SUMS: the
// upper-hex SHA-512 of each uncompressed document (the ETags), in
// sha512sum's format. Files of an earlier run that are not written again
// (a group-version no longer served) are removed. gzip output is the same
// for the same input and Go release: no name, no time in the header.
func write(dir string, docs documents) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".gz") {
			old[p] = true
		}
		return err
	})
	if err != nil {
		return err
	}
	var sums bytes.Buffer
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		f := filepath.Join(dir, filepath.FromSlash(name)+".gz")
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, gz(docs[name]), 0o644); err != nil {
			return err
		}
		delete(old, f)
		fmt.Fprintf(&sums, "%X  %s\n", sha512.Sum512(docs[name]), name)
	}
	for o := range old {
		if err := os.Remove(o); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "SHA512SUMS"), sums.Bytes(), 0o644)
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	zw.Write(b)                                              // a bytes.Buffer: no error
	zw.Close()
	return buf.Bytes()
}
