package openapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"
)

//go:embed SHA512SUMS *.gz v3
var files embed.FS

// file is one embedded document.
type file struct {
	gz   []byte
	hash string // upper-hex SHA-512 of the uncompressed bytes
}

// size is the uncompressed length (gzip's trailer: the length mod 2³²,
// and no document is that large).
func (f file) size() int64 {
	return int64(binary.LittleEndian.Uint32(f.gz[len(f.gz)-4:]))
}

func (f file) open() (io.ReadCloser, error) {
	return gzip.NewReader(bytes.NewReader(f.gz))
}

func (f file) bytes() ([]byte, error) {
	zr, err := f.open()
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

// index: every document by name ("v3/api/v1.json"), read once from
// SHA512SUMS and the embedded files. A missing or corrupt file is a build
// defect the package tests catch; at run time it is a 500 and an error.
var index = sync.OnceValues(func() (map[string]file, error) {
	sums, err := files.ReadFile("SHA512SUMS")
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	out := map[string]file{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		hash, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(hash) != 128 {
			return nil, fmt.Errorf("openapi: SHA512SUMS: bad line %q", sc.Text())
		}
		gz, err := files.ReadFile(name + ".gz")
		if err != nil || len(gz) < 18 {
			return nil, fmt.Errorf("openapi: %s.gz: missing or truncated (%v)", name, err)
		}
		out[name] = file{gz: gz, hash: hash}
	}
	return out, sc.Err()
})

// doc is the embedded document name.
func doc(name string) (file, error) {
	f, ok, err := lookup(name)
	if err == nil && !ok {
		err = fmt.Errorf("openapi: %s is not embedded", name)
	}
	return f, err
}

func lookup(name string) (file, bool, error) {
	idx, err := index()
	if err != nil {
		return file{}, false, err
	}
	f, ok := idx[name]
	return f, ok, nil
}
