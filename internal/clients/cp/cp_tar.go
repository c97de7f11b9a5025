package cp

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// skipFormat is the warning for a file cp does not copy.
const skipFormat = "warning: skipping %q: not a regular file, directory or symlink\n"

// makeTar writes src (a file, a symlink or a directory tree; symlinks are
// not followed) to w as a tar stream as kubectl's makeTar: src is the entry
// name, what a directory holds name/..., and a directory gets an entry of
// its own only when empty. Other files (devices, FIFOs, sockets) are
// skipped with a warning on warn.
func makeTar(w io.Writer, src, name string, warn io.Writer) error {
	tw := tar.NewWriter(w)
	if err := addToTar(tw, filepath.Clean(src), name, warn); err != nil {
		return err
	}
	return tw.Close()
}

func addToTar(tw *tar.Writer, file, name string, warn io.Writer) error {
	fi, err := os.Lstat(file)
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		return addDirToTar(tw, file, name, fi, warn)
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(file)
		if err != nil {
			return err
		}
		return writeTarHeader(tw, fi, name, link)
	case !fi.Mode().IsRegular():
		fmt.Fprintf(warn, skipFormat, file)
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := writeTarHeader(tw, fi, name, ""); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("read %s: %w", file, err)
	}
	return nil
}

func addDirToTar(tw *tar.Writer, dir, name string, fi fs.FileInfo, warn io.Writer) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return writeTarHeader(tw, fi, name+"/", "")
	}
	for _, e := range entries {
		if err := addToTar(tw, filepath.Join(dir, e.Name()), path.Join(name, e.Name()), warn); err != nil {
			return err
		}
	}
	return nil
}

func writeTarHeader(tw *tar.Writer, fi fs.FileInfo, name, link string) error {
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	hdr.Name = name
	return tw.WriteHeader(hdr)
}

// untar extracts the tar stream of `tar cf - SRC` into dest as kubectl's
// untarAll: an entry named prefix (SRC without its leading "/") is dest
// itself, prefix/x is dest/x; an entry outside prefix means the stream is
// corrupt. Entries that would land outside dest (absolute, "..") and
// symlinks that could point outside it are skipped with a warning on warn;
// nothing is written through a symlink below dest.
func untar(r io.Reader, prefix, dest string, warn io.Writer) error {
	x := &extractor{dest: dest, warn: warn}
	defer x.close()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the tar stream from the container: %w", err)
		}
		rest, ok := underPrefix(hdr.Name, prefix)
		if !ok {
			return errors.New("tar contents corrupted")
		}
		rel := path.Clean(strings.TrimLeft(rest, "/"))
		if path.IsAbs(hdr.Name) || rel == ".." || strings.HasPrefix(rel, "../") {
			fmt.Fprintf(warn, "warning: file %q is outside target destination, skipping\n", filepath.Join(dest, rest))
			continue
		}
		if err := x.extract(hdr, rel, tr); err != nil {
			return err
		}
	}
}

// underPrefix returns the part of name after prefix, false if name is not
// prefix or below it.
func underPrefix(name, prefix string) (string, bool) {
	switch {
	case prefix == "":
		return name, true
	case name == prefix || strings.HasPrefix(name, prefix+"/"):
		return name[len(prefix):], true
	}
	return "", false
}

// extractor writes entries below dest through an os.Root opened at dest's
// parent, so that no entry can reach outside it even by a race.
type extractor struct {
	dest string
	warn io.Writer
	root *os.Root
	base string // dest's name in root; "." when dest is root itself
}

func (x *extractor) close() {
	if x.root != nil {
		_ = x.root.Close()
	}
}

// open creates dest's parent if needed and opens it as the root, the first
// time an entry is extracted. A symlink given as dest is followed: the user
// named it.
func (x *extractor) open() error {
	if x.root != nil {
		return nil
	}
	dest, err := filepath.Abs(x.dest)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(dest); err == nil {
		dest = real
	}
	dir, base := filepath.Dir(dest), filepath.Base(dest)
	if dest == dir { // "/"
		base = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if x.root, err = os.OpenRoot(dir); err != nil {
		return err
	}
	x.base = base
	return nil
}

// extract writes one entry at rel ("." for dest itself) below dest.
func (x *extractor) extract(hdr *tar.Header, rel string, body io.Reader) error {
	target := filepath.Join(x.dest, rel)
	switch hdr.Typeflag {
	case tar.TypeXGlobalHeader:
		return nil
	case tar.TypeSymlink:
		if !linkStaysInside(rel, hdr.Linkname) {
			fmt.Fprintf(x.warn, "warning: skipping symlink: %q -> %q\n", target, hdr.Linkname)
			return nil
		}
	case tar.TypeDir, tar.TypeReg:
	default:
		fmt.Fprintf(x.warn, skipFormat, target)
		return nil
	}
	if err := x.open(); err != nil {
		return err
	}
	name := filepath.Join(x.base, rel)
	if hdr.Typeflag == tar.TypeDir {
		_, err := x.mkdirs(name, target)
		return err
	}
	if ok, err := x.mkdirs(filepath.Dir(name), target); err != nil || !ok {
		return err
	}
	if err := x.clear(name, target); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeSymlink {
		return x.root.Symlink(hdr.Linkname, name)
	}
	return x.writeFile(name, target, fs.FileMode(hdr.Mode).Perm(), body)
}

// mkdirs makes dir and its parents in the root, each a directory and no
// symlink; false (after a warning naming target) if one is a symlink.
func (x *extractor) mkdirs(dir, target string) (bool, error) {
	p := ""
	for _, elem := range strings.Split(dir, string(filepath.Separator)) {
		p = filepath.Join(p, elem)
		fi, err := x.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			err = x.root.Mkdir(p, 0o755)
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			fmt.Fprintf(x.warn, "warning: skipping %q: %q is a symlink\n", target, x.hostPath(p))
			return false, nil
		case !fi.IsDir():
			err = fmt.Errorf("%s is not a directory", x.hostPath(p))
		}
		if err != nil {
			return false, fmt.Errorf("cannot write %s: %w", target, err)
		}
	}
	return true, nil
}

// clear removes what is at name, unless it is a directory (an error).
func (x *extractor) clear(name, target string) error {
	fi, err := x.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("cannot write %s: is a directory", target)
	}
	return x.root.Remove(name)
}

// writeFile creates name (O_EXCL: never through a symlink) with body.
func (x *extractor) writeFile(name, target string, perm fs.FileMode, body io.Reader) error {
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", target, err)
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return fmt.Errorf("extract %s: %w", target, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", target, err)
	}
	return nil
}

// hostPath is root-relative p as a path under dest, for messages.
func (x *extractor) hostPath(p string) string {
	rel, err := filepath.Rel(x.base, p)
	if err != nil {
		return p
	}
	return filepath.Join(x.dest, rel)
}

// linkStaysInside reports whether a symlink at rel below dest whose target
// is link resolves below dest whatever the other symlinks there: link is
// relative, its ".." come first and climb no higher than dest. (The
// directories above the symlink are real ones: mkdirs makes sure.)
func linkStaysInside(rel, link string) bool {
	if link == "" || path.IsAbs(link) || rel == "." {
		return false
	}
	depth := strings.Count(rel, "/") // directories between dest and the symlink
	named := false
	for _, elem := range strings.Split(link, "/") {
		switch elem {
		case "", ".":
		case "..":
			if named || depth == 0 {
				return false
			}
			depth--
		default:
			named = true
		}
	}
	return true
}
