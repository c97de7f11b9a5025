package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/podhost/podhost/internal/desired/configdata"
)

// The kubelet's atomic writer layout (pkg/volume/util/atomic_writer.go):
//
//	<dir>/..2026_01_02_15_04_05.123456789/<files>  the current payload
//	<dir>/..data -> ..2026_01_02_15_04_05.123456789
//	<dir>/<top-level name> -> ..data/<top-level name>
//
// An update writes a new timestamped dir, points a new symlink at it and
// renames that over ..data (atomic), then fixes the user-visible links and
// removes the old dir. A reader that resolves ..data once sees one payload,
// never a mix of two.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// WriteAtomic makes dir hold exactly payload (relative path → file) with
// the layout above. It does nothing when dir already holds it. gid, when
// set, is the pod's fsGroup: files get that group and group read
// (the kubelet's SetVolumeOwnership on a read-only volume).
func WriteAtomic(dir string, payload map[string]configdata.File, gid *int64) error {
	for p := range payload {
		if err := checkPayloadPath(p); err != nil {
			return err
		}
	}
	old, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", dataDirName, err)
	}
	if old != "" && sameContent(filepath.Join(dir, old), payload, gid) && linksOK(dir, payload) {
		return nil
	}
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return fmt.Errorf("payload dir: %w", err)
	}
	if err := writePayload(ts, payload, gid); err != nil {
		_ = os.RemoveAll(ts)
		return err
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(ts), tmpLink); err != nil {
		_ = os.RemoveAll(ts)
		return fmt.Errorf("link payload: %w", err)
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		_ = os.RemoveAll(ts)
		return fmt.Errorf("swap %s: %w", dataDirName, err)
	}
	if err := updateLinks(dir, payload); err != nil {
		return err
	}
	if old != "" && old != filepath.Base(ts) {
		if err := removeAllOneFS(filepath.Join(dir, old)); err != nil {
			return fmt.Errorf("remove old payload: %w", err)
		}
	}
	return nil
}

func checkPayloadPath(p string) error {
	switch {
	case p == "" || filepath.IsAbs(p):
		return fmt.Errorf("invalid volume path %q", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid volume path %q: must not start with '..'", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("invalid volume path %q: must not contain '..'", p)
		}
	}
	return nil
}

func fileMode(f configdata.File, gid *int64) os.FileMode {
	m := os.FileMode(f.Mode) & os.ModePerm
	if gid != nil {
		m |= 0o440
	}
	return m
}

func writePayload(ts string, payload map[string]configdata.File, gid *int64) error {
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	for p, f := range payload {
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := os.WriteFile(full, f.Data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if gid != nil {
			if err := os.Chown(full, -1, int(*gid)); err != nil {
				return fmt.Errorf("write %s: fsGroup: %w", p, err)
			}
		}
		if err := os.Chmod(full, fileMode(f, gid)); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	return nil
}

// sameContent reports whether ts holds exactly payload (data and modes).
func sameContent(ts string, payload map[string]configdata.File, gid *int64) bool {
	n := 0
	err := filepath.WalkDir(ts, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(ts, path)
		f, ok := payload[rel]
		if !ok {
			return errors.New("extra")
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != fileMode(f, gid) {
			return errors.New("mode")
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, f.Data) {
			return errors.New("data")
		}
		n++
		return nil
	})
	return err == nil && n == len(payload)
}

func topLevel(payload map[string]configdata.File) map[string]bool {
	out := map[string]bool{}
	for p := range payload {
		first, _, _ := strings.Cut(p, "/")
		out[first] = true
	}
	return out
}

func linksOK(dir string, payload map[string]configdata.File) bool {
	for name := range topLevel(payload) {
		if target, err := os.Readlink(filepath.Join(dir, name)); err != nil || target != filepath.Join(dataDirName, name) {
			return false
		}
	}
	return true
}

// updateLinks creates the user-visible symlinks of payload and removes
// the ones of names it no longer has, never deleting through a mount a
// container left there (a nested volumeMount's mount point): that fails,
// naming it.
func updateLinks(dir string, payload map[string]configdata.File) error {
	want := topLevel(payload)
	for name := range want {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataDirName, name) {
			continue
		}
		if err := removeAllOneFS(link); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
		if err := os.Symlink(filepath.Join(dataDirName, name), link); err != nil {
			return fmt.Errorf("link %s: %w", name, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || want[e.Name()] {
			continue
		}
		if err := removeAllOneFS(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove %s: %w", e.Name(), err)
		}
	}
	return nil
}
