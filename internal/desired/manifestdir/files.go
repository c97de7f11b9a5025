package manifestdir

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/source"
)

// manifestMode is the mode of files podhost writes into the manifest dir.
const manifestMode = 0o644

// scan reads the manifest dir; a missing dir is an empty one. Problems in
// single files are passed to warn, one line each: they are not the
// caller's errors. Duplicates are not: a one-off scan cannot tell which
// file the daemon read first (source.Scan), and Apply and Delete refuse
// the objects two files declare (checkDuplicates).
func scan(dir string, opts Options) (source.Snapshot, error) {
	snap, err := source.Scan(dir, opts.AllowInsecure)
	if errors.Is(err, fs.ErrNotExist) {
		return source.Snapshot{}, nil
	}
	if err != nil {
		return snap, err
	}
	if opts.Warn != nil {
		for _, fe := range snap.Errors {
			for _, e := range fileErrors(fe.Err) {
				if _, dup := e.(*source.Duplicate); dup {
					continue
				}
				for _, line := range strings.Split(e.Error(), "\n") {
					opts.Warn(line)
				}
			}
		}
	}
	return snap, nil
}

// fileErrors splits a FileError's joined errors.
func fileErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// checkDuplicates refuses refs that two files of the dir declare: which
// of them the daemon runs depends on which it read first, so writing
// either (or deleting one document) would not do what was asked. One line
// per object, naming both files; from names each ref's input ("" none).
func checkDuplicates(refs []Ref, from []string, snap source.Snapshot) error {
	dups := map[string]*source.Duplicate{}
	for _, d := range snap.Duplicates {
		r := Ref{Kind: Kind(strings.ToLower(d.Kind)), Namespace: d.Namespace, Name: d.Name}
		dups[r.key()] = d
	}
	var errs []error
	for i, r := range refs {
		d := dups[r.key()]
		if d == nil {
			continue
		}
		prefix := ""
		if from[i] != "" {
			prefix = from[i] + ": "
		}
		files := []string{d.Owner, d.File}
		slices.Sort(files)
		errs = append(errs, fmt.Errorf("%s%s %s/%s is declared by two files of the manifest dir, %s and %s: remove one of them first (podhost runs the one it read first, `podhost get` warns about the other)",
			prefix, r.Kind, r.Namespace, r.Name, files[0], files[1]))
	}
	return errors.Join(errs...)
}

// isJSON reports whether a document is JSON (starts with '{').
func isJSON(doc []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(doc, " \t\r\n"), []byte("{"))
}

// withNewline returns doc ending in exactly one newline.
func withNewline(doc []byte) []byte {
	doc = bytes.TrimRight(doc, " \t\r\n")
	return append(doc[:len(doc):len(doc)], '\n')
}

// asJSON converts a YAML document to indented JSON (for .json files).
func asJSON(doc []byte) ([]byte, error) {
	if isJSON(doc) {
		return withNewline(doc), nil
	}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, j, "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// joinDocs joins documents into file content, separated by "---".
func joinDocs(docs [][]byte) []byte {
	var buf bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(withNewline(d))
	}
	return buf.Bytes()
}

func isJSONFile(path string) bool { return strings.EqualFold(filepath.Ext(path), ".json") }

// fileDocs reads a manifest file and returns its documents with the key of
// the object each one declares (same index; see Ref.key).
func fileDocs(path string) ([][]byte, []string, error) {
	data, _, err := manifest.ReadBytes(path)
	if err != nil {
		return nil, nil, err
	}
	docs, err := manifest.Docs(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if _, err := manifest.DecodeObjects(path, data); err != nil {
		return nil, nil, err
	}
	keys := make([]string, len(docs))
	for i, d := range docs {
		o, err := Decode(path, d)
		if err != nil {
			return nil, nil, err
		}
		keys[i] = o.key()
	}
	return docs, keys, nil
}

// modeFor is the mode of a manifest file podhost writes: 0600 when it holds
// a Secret (the source refuses world-readable Secret files), else 0644.
func modeFor(path string, data []byte) os.FileMode {
	if objs, err := manifest.DecodeObjects(path, data); err == nil && len(objs.Secrets) > 0 {
		return 0o600
	}
	return manifestMode
}

// writeAtomic replaces path with data: a dotfile temp in the same dir (the
// source ignores it), mode 0644 (root-owned when running as root), fsync,
// rename, fsync of the dir. If path is a symlink its target is replaced,
// so the link stays.
func writeAtomic(path string, data []byte) (err error) {
	if resolved, rerr := filepath.EvalSymlinks(path); rerr == nil {
		path = resolved
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".podhost-*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(modeFor(path, data)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if os.Geteuid() == 0 {
		if err = f.Chown(0, 0); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// ensureDir creates the manifest dir (0755) if it is missing.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("manifest dir: %w", err)
	}
	return nil
}

// lockDir takes an exclusive flock on dir, so that concurrent Apply and
// Delete calls serialize their read-modify-write of the manifest dir. A
// missing dir is not locked (nothing to protect yet).
func lockDir(ctx context.Context, dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest dir: %w", err)
	}
	for {
		err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { d.Close() }, nil // close releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			d.Close()
			return nil, fmt.Errorf("lock manifest dir: %w", err)
		}
		select {
		case <-ctx.Done():
			d.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// removeFile removes path (a symlink itself, not its target) and syncs the dir.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// newFileName picks the file name for a new object: "<name><ext>" in the
// default namespace, else "<namespace>_<name><ext>"; on a clash with any
// existing entry (or one planned in this run) the namespaced form, then
// "-2", "-3"... A ConfigMap or Secret gets its kind before the extension
// ("app.configmap.yaml").
func newFileName(r Ref, ext string, taken map[string]bool) string {
	if r.Kind != Pod {
		ext = "." + string(r.Kind) + ext
	}
	var cands []string
	if r.Namespace == "" || r.Namespace == "default" {
		cands = append(cands, r.Name+ext)
	}
	base := r.Namespace + "_" + r.Name
	cands = append(cands, base+ext)
	for _, c := range cands {
		if !taken[c] {
			return c
		}
	}
	for i := 2; ; i++ {
		if c := fmt.Sprintf("%s-%d%s", base, i, ext); !taken[c] {
			return c
		}
	}
}

// dirNames returns the set of entry names in dir (empty when missing).
func dirNames(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("manifest dir: %w", err)
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names, nil
}
