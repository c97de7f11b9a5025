// Package imagesdir imports the image archives of podhost's images
// directory (config imagesDir, default /var/lib/podhost/images, as k3s'
// agent/images) into podhost's containerd namespace: at start, before the
// first pod is synced, and whenever a file lands there.
//
// Archives: OCI image layouts and `docker save` archives as tar files,
// plain, gzip or zstd (*.tar, *.tar.gz, *.tgz, *.tar.zst, *.tar.zstd,
// *.tzst); dotfiles and other names are ignored. The import is containerd's
// own (client.Import through the runtime). Every image an archive yields is
// pinned: label podhost.io/pinned=images-dir:<file>, which image GC and
// `images prune` never remove; an archive that is gone from the directory
// unpins its images.
//
// An archive already imported is skipped without being read: each of its
// images carries podhost.io/images-dir-import=<stamp>/<count>, the stamp
// being the archive's inode, size, mtime and ctime at import. When every
// image pinned to the file has the file's current stamp, the count matches
// and each target manifest is still in the content store, the file is
// done: a boot with gigabytes of archives already imported costs one image
// list and one stat per file. Any change of the file (a new copy, even of
// the same size and mtime, changes its inode or ctime) imports it again.
//
// Two archives naming the same image: the first by file name keeps it;
// the later one's copy of that name is not imported (a warning).
//
// A broken archive is one error line naming the file (Errors, the log, an
// event through Config.Event); it is not retried until the file changes,
// and the other archives and the pods are not held up by it.
package imagesdir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Runtime is what the images dir needs of containerd (*runtime.Runtime).
type Runtime interface {
	PinnedImages(ctx context.Context) ([]runtime.PinnedImage, error)
	ImportArchive(ctx context.Context, in io.Reader, opts runtime.ImportOptions) ([]runtimeapi.Image, error)
	SetImageLabels(ctx context.Context, ref string, labels map[string]string) error
}

// Config configures a Loader.
type Config struct {
	Dir string
	// AllowInsecure skips the ownership and mode checks (the directory and
	// each archive must be owned by root and not group- or world-writable:
	// an archive names images that pods run).
	AllowInsecure bool
	// Debounce is the quiet time after the last change in the directory
	// before it is read again (a copy in progress); default 500 ms.
	Debounce time.Duration
	Logger   *slog.Logger
	// Event, if set, records a node event (a broken archive, images
	// imported).
	Event func(typ, reason, message string)
	// Imported, if set, is called after a pass that imported images (pods
	// waiting for one can be synced again).
	Imported func(refs []string)
}

// FileError is an archive that could not be imported.
type FileError struct {
	File string // path
	Err  error  // "images dir: app.tar: ..."
}

func (e FileError) Error() string { return e.Err.Error() }

// Result is what one pass did.
type Result struct {
	Imported, Skipped []string // file names
	Images            []string // refs imported
	Errors            []FileError
	Took              time.Duration
}

// Loader imports the images directory.
type Loader struct {
	rt    Runtime
	cfg   Config
	ready chan struct{}
	once  sync.Once

	mu     sync.Mutex
	errs   map[string]FileError // by file name, files still present
	dirErr *FileError           // the last pass failed for the directory
	failed map[string]string    // file name → stamp of the failed attempt
}

// New returns a Loader.
func New(rt Runtime, cfg Config) *Loader {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = 500 * time.Millisecond
	}
	return &Loader{rt: rt, cfg: cfg, ready: make(chan struct{}), errs: map[string]FileError{}, failed: map[string]string{}}
}

// Ready is closed after the first pass (Run's), whatever its outcome.
func (l *Loader) Ready() <-chan struct{} { return l.ready }

// Errors lists the archives that failed, by file name.
func (l *Loader) Errors() []FileError {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]FileError, 0, len(l.errs)+1)
	if l.dirErr != nil {
		out = append(out, *l.dirErr)
	}
	for _, e := range l.errs {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b FileError) int { return strings.Compare(a.File, b.File) })
	return out
}

// IsArchiveName reports whether name is an archive the directory imports.
func IsArchiveName(name string) bool {
	if strings.HasPrefix(name, ".") {
		return false
	}
	for _, ext := range []string{".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd", ".tzst"} {
		if strings.HasSuffix(name, ext) && len(name) > len(ext) {
			return true
		}
	}
	return false
}

// file is an archive found in the directory.
type file struct {
	name, path, stamp string
	err               error // stat or permission problem
}

// Sync does one pass: imports every archive that changed since its import,
// unpins the images of archives gone. A missing directory is an empty one
// (nothing is unpinned); an unreadable or insecure one is an error.
func (l *Loader) Sync(ctx context.Context) (Result, error) {
	start := time.Now()
	files, err := l.list()
	if errors.Is(err, fs.ErrNotExist) {
		return Result{Took: time.Since(start)}, nil
	}
	if err != nil {
		return Result{}, err
	}
	pinned, err := l.rt.PinnedImages(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("images dir: %w", err)
	}
	st := newPinState(pinned)
	var res Result
	present := map[string]bool{}
	for _, f := range files {
		present[f.name] = true
	}
	for _, f := range files {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		l.syncFile(ctx, f, st, present, &res)
	}
	l.unpinGone(ctx, st, present)
	l.forgetGone(present)
	res.Took = time.Since(start)
	return res, nil
}

func (l *Loader) syncFile(ctx context.Context, f file, st *pinState, present map[string]bool, res *Result) {
	if f.err == nil && st.done(f.name, f.stamp) {
		res.Skipped = append(res.Skipped, f.name)
		l.clearError(f.name)
		return
	}
	if f.err == nil && l.failedBefore(f.name, f.stamp) {
		res.Errors = append(res.Errors, l.errorOf(f.name))
		return
	}
	err := f.err
	var imgs []string
	if err == nil {
		imgs, err = l.importFile(ctx, f, st, present)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		fe := FileError{File: f.path, Err: fmt.Errorf("images dir: %s: %w", f.name, err)}
		l.recordError(f, fe)
		res.Errors = append(res.Errors, fe)
		return
	}
	l.clearError(f.name)
	res.Imported = append(res.Imported, f.name)
	res.Images = append(res.Images, imgs...)
}

// importFile imports one archive with the pinned label, then stamps its
// images: a crash in between leaves them unstamped, imported again next
// time.
func (l *Loader) importFile(ctx context.Context, f file, st *pinState, present map[string]bool) ([]string, error) {
	in, err := openArchive(f.path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	pin := wellknown.PinnedImagesDir + f.name
	var refused []string
	keep := func(ref string) bool {
		if other := st.owner(ref); other != "" && other != f.name && present[other] && other < f.name {
			refused = append(refused, ref+" (in "+other+")")
			return false
		}
		return true
	}
	t0 := time.Now()
	imgs, err := l.rt.ImportArchive(ctx, in, runtime.ImportOptions{Labels: map[string]string{wellknown.LabelImagePinned: pin}, Keep: keep})
	if err != nil {
		return nil, err
	}
	if len(refused) > 0 {
		l.cfg.Logger.Warn("images dir: images also in an earlier archive were not taken from this one", "file", f.name, "images", refused)
	}
	if len(imgs) == 0 {
		return nil, errors.New("the archive holds no image")
	}
	stamp := f.stamp + "/" + strconv.Itoa(len(imgs))
	refs := make([]string, 0, len(imgs))
	for _, img := range imgs {
		if err := l.rt.SetImageLabels(ctx, img.Ref, map[string]string{wellknown.LabelImagesDirImport: stamp}); err != nil {
			return nil, err
		}
		st.take(img.Ref, f.name)
		refs = append(refs, img.Ref)
	}
	l.cfg.Logger.Info("images dir: imported", "file", f.name, "images", refs, "took", time.Since(t0).Round(time.Millisecond))
	return refs, nil
}

// unpinGone unpins the images of archives no longer in the directory.
func (l *Loader) unpinGone(ctx context.Context, st *pinState, present map[string]bool) {
	for ref, owner := range st.owners {
		if present[owner] {
			continue
		}
		if err := l.rt.SetImageLabels(ctx, ref, map[string]string{wellknown.LabelImagePinned: "", wellknown.LabelImagesDirImport: ""}); err != nil {
			l.cfg.Logger.Warn("images dir: unpin", "image", ref, "err", err)
			continue
		}
		l.cfg.Logger.Info("images dir: archive gone, image unpinned", "file", owner, "image", ref)
	}
}

func (l *Loader) recordError(f file, fe FileError) {
	l.mu.Lock()
	l.errs[f.name] = fe
	l.failed[f.name] = f.stamp
	l.mu.Unlock()
	l.cfg.Logger.Error(fe.Err.Error())
	if l.cfg.Event != nil {
		l.cfg.Event("Warning", "ImagesDirArchiveFailed", fe.Err.Error())
	}
}

func (l *Loader) clearError(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.errs, name)
	delete(l.failed, name)
}

func (l *Loader) failedBefore(name, stamp string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.failed[name]
	return ok && s == stamp
}

func (l *Loader) errorOf(name string) FileError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs[name]
}

func (l *Loader) forgetGone(present map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name := range l.errs {
		if !present[name] {
			delete(l.errs, name)
			delete(l.failed, name)
		}
	}
}

// list reads the directory: archives by name, each stamped (or with the
// reason it cannot be read).
func (l *Loader) list() ([]file, error) {
	if !l.cfg.AllowInsecure {
		if err := source.CheckPerms(l.cfg.Dir); err != nil {
			return nil, fmt.Errorf("images dir: %w", err)
		}
	}
	ents, err := os.ReadDir(l.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("images dir: %w", err)
	}
	var out []file
	for _, e := range ents {
		if !IsArchiveName(e.Name()) {
			continue
		}
		f := file{name: e.Name(), path: filepath.Join(l.cfg.Dir, e.Name())}
		f.stamp, f.err = l.stampOf(f.path)
		out = append(out, f)
	}
	return out, nil
}

// stampOf identifies the file's current version without reading it
// (symlinks followed).
func (l *Loader) stampOf(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if !l.cfg.AllowInsecure {
		if err := source.CheckPerms(path); err != nil {
			return "", err
		}
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("no stat information")
	}
	return fmt.Sprintf("%d.%d.%d.%d", sys.Ino, sys.Size, sys.Mtim.Nano(), sys.Ctim.Nano()), nil
}

// openArchive opens path without blocking on a FIFO swapped in since the
// stat.
func openArchive(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
