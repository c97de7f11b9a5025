package imagesdir

import (
	"bufio"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podhost/podhost/internal/host/runtime"
	"github.com/podhost/podhost/internal/model/runtimeapi"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// fakeStore is an image store: an "archive" is lines of "ref digest"; one
// starting with "broken" fails to import.
type fakeStore struct {
	mu      sync.Mutex
	imgs    map[string]runtime.PinnedImage // by ref
	imports []string                       // refs asked for, per import: joined
}

func newFakeStore() *fakeStore { return &fakeStore{imgs: map[string]runtime.PinnedImage{}} }

func (f *fakeStore) PinnedImages(context.Context) ([]runtime.PinnedImage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []runtime.PinnedImage
	for _, img := range f.imgs {
		if img.Labels[wellknown.LabelImagePinned] != "" {
			img.Labels = maps.Clone(img.Labels)
			out = append(out, img)
		}
	}
	return out, nil
}

func (f *fakeStore) ImportArchive(_ context.Context, in io.Reader, opts runtime.ImportOptions) ([]runtimeapi.Image, error) {
	var out []runtimeapi.Image
	sc := bufio.NewScanner(in)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.imports = append(f.imports, strings.Join(lines, ","))
	if len(lines) > 0 && strings.HasPrefix(lines[0], "broken") {
		return nil, errors.New("unexpected EOF")
	}
	for _, l := range lines {
		ref, dgst, _ := strings.Cut(l, " ")
		if opts.Keep != nil && !opts.Keep(ref) {
			continue
		}
		f.imgs[ref] = runtime.PinnedImage{Ref: ref, Digest: dgst, Labels: maps.Clone(opts.Labels), Present: true}
		out = append(out, runtimeapi.Image{Ref: ref, Digest: dgst})
	}
	return out, nil
}

func (f *fakeStore) SetImageLabels(_ context.Context, ref string, labels map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	img, ok := f.imgs[ref]
	if !ok {
		return nil
	}
	for k, v := range labels {
		if v == "" {
			delete(img.Labels, k)
		} else {
			img.Labels[k] = v
		}
	}
	f.imgs[ref] = img
	return nil
}

func (f *fakeStore) importCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.imports)
}

func (f *fakeStore) pin(ref string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.imgs[ref].Labels[wellknown.LabelImagePinned]
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func syncOK(t *testing.T, l *Loader) Result {
	t.Helper()
	res, err := l.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func newLoader(t *testing.T) (*Loader, *fakeStore, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	st := newFakeStore()
	return New(st, Config{Dir: dir, AllowInsecure: os.Geteuid() != 0}), st, dir
}

func TestSyncImportsOnceThenSkips(t *testing.T) {
	l, st, dir := newLoader(t)
	write(t, dir, "a.tar", "app:1 sha256:a\nimport@sha256:u sha256:u\n")
	write(t, dir, "b.tar.zst", "db:2 sha256:b\n")
	write(t, dir, "notes.txt", "ignored")
	res := syncOK(t, l)
	if !slices.Equal(res.Imported, []string{"a.tar", "b.tar.zst"}) || len(res.Skipped) != 0 {
		t.Fatalf("first pass: %+v", res)
	}
	if got := st.pin("app:1"); got != "images-dir:a.tar" {
		t.Fatalf("app:1 pinned %q", got)
	}
	res = syncOK(t, l)
	if len(res.Imported) != 0 || !slices.Equal(res.Skipped, []string{"a.tar", "b.tar.zst"}) || st.importCount() != 2 {
		t.Fatalf("second pass read an archive: %+v, imports %d", res, st.importCount())
	}
	// A new copy of the file, even with the same content, is imported again.
	write(t, dir, "a.tar", "app:1 sha256:a\nimport@sha256:u sha256:u\n")
	if res := syncOK(t, l); !slices.Equal(res.Imported, []string{"a.tar"}) {
		t.Fatalf("after rewrite: %+v", res)
	}
	// An image removed from the store brings its archive back.
	st.mu.Lock()
	delete(st.imgs, "db:2")
	st.mu.Unlock()
	if res := syncOK(t, l); !slices.Equal(res.Imported, []string{"b.tar.zst"}) {
		t.Fatalf("after removing db:2: %+v", res)
	}
}

func TestSyncBrokenArchiveIsOneErrorUntilChanged(t *testing.T) {
	l, st, dir := newLoader(t)
	write(t, dir, "bad.tar", "broken\n")
	write(t, dir, "good.tar", "app:1 sha256:a\n")
	res := syncOK(t, l)
	if !slices.Equal(res.Imported, []string{"good.tar"}) || len(res.Errors) != 1 {
		t.Fatalf("pass: %+v", res)
	}
	errs := l.Errors()
	if len(errs) != 1 || errs[0].File != filepath.Join(dir, "bad.tar") ||
		errs[0].Error() != "images dir: bad.tar: unexpected EOF" {
		t.Fatalf("Errors() = %v", errs)
	}
	n := st.importCount()
	syncOK(t, l)
	if st.importCount() != n {
		t.Fatal("an unchanged broken archive was read again")
	}
	write(t, dir, "bad.tar", "fixed:1 sha256:f\n")
	if res := syncOK(t, l); !slices.Equal(res.Imported, []string{"bad.tar"}) || len(l.Errors()) != 0 {
		t.Fatalf("fixed archive: %+v, errors %v", res, l.Errors())
	}
	if err := os.Remove(filepath.Join(dir, "bad.tar")); err != nil {
		t.Fatal(err)
	}
	syncOK(t, l)
	if got := st.pin("fixed:1"); got != "" {
		t.Fatalf("image of a removed archive still pinned: %q", got)
	}
	if got := st.pin("app:1"); got != "images-dir:good.tar" {
		t.Fatalf("app:1 pinned %q", got)
	}
}

func TestSyncFirstArchiveByNameKeepsAnImage(t *testing.T) {
	l, st, dir := newLoader(t)
	write(t, dir, "a.tar", "app:1 sha256:a\n")
	write(t, dir, "z.tar", "app:1 sha256:z\nother:1 sha256:o\n")
	syncOK(t, l)
	if got := st.imgs["app:1"].Digest; got != "sha256:a" {
		t.Fatalf("app:1 is %s, want a.tar's", got)
	}
	if res := syncOK(t, l); len(res.Imported) != 0 {
		t.Fatalf("second pass imported %v: the two archives fight over app:1", res.Imported)
	}
}

func TestSyncRefusesInsecureArchive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("ownership checks need root")
	}
	l, _, dir := newLoader(t)
	write(t, dir, "w.tar", "app:1 sha256:a\n")
	if err := os.Chmod(filepath.Join(dir, "w.tar"), 0o666); err != nil {
		t.Fatal(err)
	}
	res := syncOK(t, l)
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "group- or world-writable") {
		t.Fatalf("pass: %+v", res)
	}
}

func TestRunImportsALandedArchive(t *testing.T) {
	l, st, dir := newLoader(t)
	l.cfg.Debounce = 10 * time.Millisecond
	imported := make(chan []string, 4)
	l.cfg.Imported = func(refs []string) { imported <- refs }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	<-l.Ready()
	write(t, dir, "late.tar.gz", "late:1 sha256:l\n")
	select {
	case refs := <-imported:
		if !slices.Equal(refs, []string{"late:1"}) {
			t.Fatalf("imported %v", refs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a landed archive was not imported")
	}
	if st.pin("late:1") != "images-dir:late.tar.gz" {
		t.Fatal("not pinned")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestIsArchiveName(t *testing.T) {
	for name, want := range map[string]bool{"a.tar": true, "a.tar.gz": true, "a.tgz": true, "a.tar.zst": true, "a.tzst": true,
		".a.tar": false, "a.tar.part": false, ".tar": false, "a.zip": false} {
		if got := IsArchiveName(name); got != want {
			t.Errorf("IsArchiveName(%q) = %v", name, got)
		}
	}
}
