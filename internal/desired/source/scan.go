package source

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
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
// validated; duplicates are resolved (first file by name wins: a one-off
// read cannot know which the daemon saw first, see Snapshot.Duplicates). Errors of
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

	// seen is each file's place in the order the scanner first saw the
	// files (files new to one scan in name order); with a store it is
	// persisted, so the owner of a duplicated object survives a restart.
	seen     map[string]uint64
	lastSeen uint64

	store  LastGood                          // nil: nothing persisted (Scan)
	log    *slog.Logger                      // store problems
	stored map[string]records.ManifestRecord // what the store holds, by path
	loaded bool                              // the store was read
	puts   []records.ManifestRecord          // queued by this scan (flushStored)
	dels   []string
}

func newScanner(dir string, allowInsecure bool) *scanner {
	return &scanner{
		dir: dir, allowInsecure: allowInsecure,
		cache: map[string]*cacheEntry{}, good: map[string]manifest.Objects{},
		log: slog.Default(), stored: map[string]records.ManifestRecord{},
		seen: map[string]uint64{},
	}
}

// filePods is the outcome for one file: its objects (fresh or kept) and errors.
type filePods struct {
	path string
	objs manifest.Objects
	errs []error
	kept bool   // pods are the last good version; the file is now invalid
	seen uint64 // place in the first-seen order (scanner.place)
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
	for _, m := range []map[string]manifest.Objects{s.good} {
		maps.DeleteFunc(m, func(path string, _ manifest.Objects) bool { return !seen[path] })
	}
	maps.DeleteFunc(s.cache, func(path string, _ *cacheEntry) bool { return !seen[path] })
	maps.DeleteFunc(s.seen, func(path string, _ uint64) bool { return !seen[path] })
	s.forgetStored(seen)
	s.flushStored()
	slices.SortStableFunc(files, func(a, b *filePods) int { return cmp.Compare(a.seen, b.seen) })
	return assemble(files), nil
}

// place returns path's place in the first-seen order, giving a new file
// the next one (ReadDir's name order among the files new to one scan).
func (s *scanner) place(path string) uint64 {
	if n, ok := s.seen[path]; ok {
		return n
	}
	s.lastSeen++
	s.seen[path] = s.lastSeen
	return s.lastSeen
}

// loadFile reads one file. ok is false when the file vanished meanwhile.
func (s *scanner) loadFile(path string) (*filePods, bool) {
	objs, data, err := s.read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	fp := &filePods{path: path, seen: s.place(path)}
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

// assemble resolves duplicates (the first file owns: files come in their
// first-seen order) and builds the snapshot.
func assemble(files []*filePods) Snapshot {
	var snap Snapshot
	owner := map[string]string{} // kind + full name → path of the defining file
	for _, fp := range files {
		var kept []string
		for _, cm := range fp.objs.ConfigMaps {
			if snap.claim(owner, "ConfigMap", cm.Namespace, cm.Name, fp) {
				snap.ConfigMaps = append(snap.ConfigMaps, cm)
			}
		}
		for _, sec := range fp.objs.Secrets {
			if snap.claim(owner, "Secret", sec.Namespace, sec.Name, fp) {
				snap.Secrets = append(snap.Secrets, sec)
			}
		}
		for _, w := range fp.objs.Workloads {
			if snap.claim(owner, w.Kind, w.Meta().Namespace, w.Meta().Name, fp) {
				snap.Workloads = append(snap.Workloads, w)
			}
		}
		snap.claimServices(owner, fp)
		for _, p := range fp.objs.Pods {
			if !snap.claim(owner, "Pod", p.Namespace, p.Name, fp) {
				continue
			}
			snap.Pods = append(snap.Pods, p)
			if fp.kept {
				kept = append(kept, manifest.FullName(p))
			}
		}
		if len(fp.errs) > 0 {
			snap.Errors = append(snap.Errors, FileError{File: fp.path, Err: errors.Join(fp.errs...), Kept: kept})
		}
	}
	slices.SortFunc(snap.Errors, func(a, b FileError) int { return strings.Compare(a.File, b.File) })
	return snap
}

// claim records fp as the file defining the object, or, when an earlier
// file already does, adds a Duplicate to fp's errors and to the snapshot.
func (snap *Snapshot) claim(owner map[string]string, kind, ns, name string, fp *filePods) bool {
	key := kind + " " + ns + "/" + name
	other, dup := owner[key]
	if !dup {
		owner[key] = fp.path
		return true
	}
	d := &Duplicate{Kind: kind, Namespace: ns, Name: name, File: fp.path, Owner: other}
	fp.errs = append(fp.errs, d)
	snap.Duplicates = append(snap.Duplicates, d)
	return false
}

// Duplicate is a second declaration of an object: File declares what Owner,
// a file the source read before it, already does. File's declaration is
// refused (an error of File) until Owner's is gone.
type Duplicate struct {
	Kind            string // Pod, ConfigMap, Secret or a workload kind (manifest.KindDeployment, ...)
	Namespace, Name string
	File, Owner     string // paths
}

// Error is the line the file's errors show, naming both files.
func (d *Duplicate) Error() string {
	kind := d.Kind
	if kind == "Pod" {
		kind = "pod"
	}
	return fmt.Sprintf("%s: duplicate %s %s/%s, already defined in %s (this file's is not used; remove one of the two)",
		filepath.Base(d.File), kind, d.Namespace, d.Name, filepath.Base(d.Owner))
}
