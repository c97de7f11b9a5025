package manifestdir

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Removal is Delete's outcome for one object.
type Removal struct {
	Ref Ref
	// File is the path of the file whose document declares the object; ""
	// when none does.
	File string
	// Removed: the document is gone from File (false when not found, in a
	// dry run, and when rewriting File failed).
	Removed bool
}

// Delete removes the documents that declare refs from the manifest dir,
// whatever files hold them: a file left with no document is removed, else
// it is rewritten atomically without them. It returns one Removal per ref,
// in the order given; a ref no document declares is not an error (File
// ""). An object two files declare refuses the whole call, naming both
// files (checkDuplicates): nothing is removed. A file that cannot be rewritten does not stop the others: the error
// joins every failure, one line each. When ctx ends between files, the
// error is ctx's alone and the Removals still say what was removed. The
// dir is flocked from its scan to the last write; a missing dir is empty.
func Delete(ctx context.Context, dir string, refs []Ref, opts Options) ([]Removal, error) {
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap, err := scan(dir, opts)
	if err != nil {
		return nil, err
	}
	if err := checkDuplicates(refs, make([]string, len(refs)), snap); err != nil {
		return nil, err
	}
	idx := index(snap)
	out := make([]Removal, len(refs))
	byFile := map[string][]string{} // file → keys of its documents to remove
	for i, r := range refs {
		out[i].Ref = r
		if loc, ok := idx[r.key()]; ok {
			if err := loc.ownedErr(r); err != nil {
				return nil, err
			}
			out[i].File = loc.file
			byFile[loc.file] = append(byFile[loc.file], r.key())
		}
	}
	if opts.DryRun {
		return out, nil
	}
	var errs []error
	removed := map[string]bool{}
	for _, file := range slices.Sorted(maps.Keys(byFile)) {
		if err := ctx.Err(); err != nil {
			errs = []error{err} // interrupted: what was removed is still reported
			break
		}
		if err := removeDocs(file, byFile[file]); err != nil {
			errs = append(errs, err)
			continue
		}
		removed[file] = true
	}
	for i := range out {
		out[i].Removed = removed[out[i].File]
	}
	return out, errors.Join(errs...)
}

// removeDocs deletes the documents of keys from file: removes the file
// when nothing is left, else rewrites it atomically.
func removeDocs(file string, keys []string) error {
	docs, docKeys, err := fileDocs(file)
	if err != nil {
		return fmt.Errorf("delete from %s: %w", file, err)
	}
	var keep [][]byte
	for i, k := range docKeys {
		if !slices.Contains(keys, k) {
			keep = append(keep, docs[i])
		}
	}
	if len(keep) == len(docs) {
		return fmt.Errorf("delete from %s: file changed meanwhile; retry", file)
	}
	if len(keep) == 0 {
		return removeFile(file)
	}
	return writeAtomic(file, joinDocs(keep))
}

// Lookup returns the object ref names as the manifest dir declares it: its
// document, as the file holds it, decoded, and the file's path. An object
// no valid document declares is an error wrapping ErrNotFound. It takes no
// lock: what it returns may be replaced at once (Apply with ReplaceOnly,
// then, still finds it or fails).
func Lookup(dir string, ref Ref, opts Options) (Object, string, error) {
	snap, err := scan(dir, opts)
	if err != nil {
		return Object{}, "", err
	}
	loc, ok := index(snap)[ref.key()]
	if !ok {
		return Object{}, "", fmt.Errorf("%s %s/%s %w", ref.Kind, ref.Namespace, ref.Name, ErrNotFound)
	}
	if err := loc.ownedErr(ref); err != nil {
		return Object{}, "", err
	}
	docs, keys, err := fileDocs(loc.file)
	if err != nil {
		return Object{}, "", fmt.Errorf("read %s: %w", loc.file, err)
	}
	i := slices.Index(keys, ref.key())
	if i < 0 {
		return Object{}, "", fmt.Errorf("%s %s/%s %w (%s changed meanwhile)", ref.Kind, ref.Namespace, ref.Name, ErrNotFound, loc.file)
	}
	obj, err := Decode(loc.file, docs[i])
	if err != nil {
		return Object{}, "", err
	}
	return obj, loc.file, nil
}
