package source

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/model/records"
)

// ErrInsecure marks a manifest dir or file refused for its ownership or mode.
var ErrInsecure = errors.New("insecure permissions")

// IsManifestName reports whether a directory entry name is a manifest
// podhost reads: *.yaml, *.yml or *.json (any case), not a dotfile and not an
// editor or backup file.
func IsManifestName(name string) bool {
	if name == "" || name[0] == '.' || name == "4913" {
		return false
	}
	if strings.HasPrefix(name, "#") || strings.HasSuffix(name, "#") || strings.HasSuffix(name, "~") {
		return false
	}
	lower := strings.ToLower(name)
	for _, suf := range []string{".swp", ".swx", ".bak", ".tmp", ".orig"} {
		if strings.HasSuffix(lower, suf) {
			return false
		}
	}
	switch filepath.Ext(lower) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// CheckPerms checks that path (symlinks followed) is owned by root and not
// group- or world-writable.
func CheckPerms(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkInfo(path, fi)
}

func checkInfo(path string, fi fs.FileInfo) error {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
		return fmt.Errorf("%s: %w: owned by uid %d, must be owned by root", path, ErrInsecure, st.Uid)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s: %w: mode %04o is group- or world-writable", path, ErrInsecure, perm)
	}
	return nil
}

// Scan does one full read of dir: every manifest file is read, decoded and
// validated; duplicates are resolved (first file by name wins). Errors of
// single files are in Snapshot.Errors; the error return is for the dir itself
// (missing: wraps fs.ErrNotExist; refused: wraps ErrInsecure).
func Scan(dir string, allowInsecure bool) (Snapshot, error) {
	return newScanner(dir, allowInsecure).scan()
}

// cacheEntry remembers the bytes last read from a file and what they decoded
// to, so a relist only decodes files whose content changed.
type cacheEntry struct {
	data []byte
	objs manifest.Objects
	err  error
}

// scanner reads a manifest dir; it remembers each file's last good pods so a
// file that turns invalid keeps them (Source), and caches decode results.
// With a store, the last good content of each file is also persisted and
// loaded by the first scan, so a file that is invalid when podhost starts
// keeps its pods too.
type scanner struct {
	dir           string
	allowInsecure bool
	cache         map[string]*cacheEntry
	good          map[string]manifest.Objects

	store  LastGood                 // nil: nothing persisted (Scan)
	log    *slog.Logger             // store problems
	stored map[string][]byte        // what the store holds, by path
	loaded bool                     // the store was read
	puts   []records.ManifestRecord // queued by this scan (flushStored)
	dels   []string
}

func newScanner(dir string, allowInsecure bool) *scanner {
	return &scanner{
		dir: dir, allowInsecure: allowInsecure,
		cache: map[string]*cacheEntry{}, good: map[string]manifest.Objects{},
		log: slog.Default(), stored: map[string][]byte{},
	}
}

// filePods is the outcome for one file: its objects (fresh or kept) and errors.
type filePods struct {
	path string
	objs manifest.Objects
	errs []error
	kept bool // pods are the last good version; the file is now invalid
}

func (s *scanner) scan() (Snapshot, error) {
	if !s.allowInsecure {
		if err := CheckPerms(s.dir); err != nil {
			return Snapshot{}, fmt.Errorf("manifest dir: %w", err)
		}
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return Snapshot{}, fmt.Errorf("manifest dir: %w", err)
	}
	s.loadStored()
	var files []*filePods
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if !IsManifestName(e.Name()) {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		fp, ok := s.loadFile(path)
		if !ok {
			continue
		}
		seen[path] = true
		files = append(files, fp)
	}
	for path := range s.good {
		if !seen[path] {
			delete(s.good, path)
		}
	}
	for path := range s.cache {
		if !seen[path] {
			delete(s.cache, path)
		}
	}
	s.forgetStored(seen)
	s.flushStored()
	return assemble(files), nil
}

// loadFile reads one file. ok is false when the file vanished meanwhile.
func (s *scanner) loadFile(path string) (*filePods, bool) {
	fp := &filePods{path: path}
	objs, data, err := s.read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err == nil {
		err = checkImmutable(filepath.Base(path), s.good[path], objs)
	}
	if err == nil {
		s.good[path] = objs
		s.persist(path, data, len(objs.Secrets) > 0)
		fp.objs = objs
		return fp, true
	}
	fp.errs = append(fp.errs, err)
	if prev, ok := s.good[path]; ok {
		fp.objs = prev
		fp.kept = true
	}
	return fp, true
}

// read opens path (following symlinks), checks the target's type, owner,
// mode and size, and decodes it (cached by content). It returns the bytes
// read with the objects. A file holding a Secret must not be
// world-readable (checked even with allowInsecure).
func (s *scanner) read(path string) (manifest.Objects, []byte, error) {
	objs, data, fi, err := s.decode(path)
	if err == nil && len(objs.Secrets) > 0 && fi.Mode().Perm()&0o004 != 0 {
		err = fmt.Errorf("%s: %w: mode %04o is world-readable and the file holds a Secret (chmod o-r)", filepath.Base(path), ErrInsecure, fi.Mode().Perm())
	}
	if err != nil {
		return manifest.Objects{}, nil, err
	}
	return objs, data, nil
}

func (s *scanner) decode(path string) (manifest.Objects, []byte, fs.FileInfo, error) {
	var none manifest.Objects
	base := filepath.Base(path)
	data, fi, err := manifest.ReadBytes(path)
	if err != nil {
		var el manifest.ErrorList
		switch {
		case errors.As(err, &el):
			return none, nil, nil, err
		case errors.Is(err, fs.ErrNotExist):
			if _, lerr := os.Lstat(path); lerr == nil {
				return none, nil, nil, fmt.Errorf("%s: dangling symlink", base)
			}
			return none, nil, nil, errors.Unwrap(err)
		}
		return none, nil, nil, fmt.Errorf("%s: %w", base, errors.Unwrap(err))
	}
	if !s.allowInsecure {
		if err := checkInfo(base, fi); err != nil {
			return none, nil, nil, err
		}
	}
	if c := s.cache[path]; c != nil && bytes.Equal(c.data, data) {
		return c.objs, data, fi, c.err
	}
	objs, err := manifest.DecodeObjects(path, data)
	s.cache[path] = &cacheEntry{data: data, objs: objs, err: err}
	return objs, data, fi, err
}

// assemble resolves duplicate full names (first file by name wins; files
// come sorted from ReadDir) and builds the snapshot.
func assemble(files []*filePods) Snapshot {
	var snap Snapshot
	owner := map[string]string{} // kind + full name → base name of the defining file
	for _, fp := range files {
		base := filepath.Base(fp.path)
		var kept []string
		for _, cm := range fp.objs.ConfigMaps {
			if claim(owner, "ConfigMap", cm.Namespace+"/"+cm.Name, base, fp) {
				snap.ConfigMaps = append(snap.ConfigMaps, cm)
			}
		}
		for _, sec := range fp.objs.Secrets {
			if claim(owner, "Secret", sec.Namespace+"/"+sec.Name, base, fp) {
				snap.Secrets = append(snap.Secrets, sec)
			}
		}
		for _, p := range fp.objs.Pods {
			name := manifest.FullName(p)
			if other, dup := owner[name]; dup {
				fp.errs = append(fp.errs, fmt.Errorf("%s: duplicate pod %s, already defined in %s", base, name, other))
				continue
			}
			owner[name] = base
			snap.Pods = append(snap.Pods, p)
			if fp.kept {
				kept = append(kept, name)
			}
		}
		if len(fp.errs) > 0 {
			snap.Errors = append(snap.Errors, FileError{File: fp.path, Err: errors.Join(fp.errs...), Kept: kept})
		}
	}
	slices.SortFunc(snap.Errors, func(a, b FileError) int { return strings.Compare(a.File, b.File) })
	return snap
}

// claim records base as the file defining kind name, or adds a duplicate
// error to fp when an earlier file already does.
func claim(owner map[string]string, kind, name, base string, fp *filePods) bool {
	key := kind + " " + name
	if other, dup := owner[key]; dup {
		fp.errs = append(fp.errs, fmt.Errorf("%s: duplicate %s %s, already defined in %s", base, kind, name, other))
		return false
	}
	owner[key] = base
	return true
}
