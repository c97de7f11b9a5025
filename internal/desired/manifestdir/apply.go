package manifestdir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/order"
	"github.com/podhost/podhost/internal/desired/podsecurity"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/wellknown"
)

// Options tune Apply, Delete and Lookup.
type Options struct {
	AllowInsecure bool // the manifest dir's permission checks off (source.CheckPerms)
	// DryRun plans and reports without writing (Apply: nor creating or
	// locking the dir).
	DryRun bool
	// Mode: Apply's rule for objects that exist or not (default: either).
	Mode Mode
	// Warn receives, one line each, the problems of files in the dir that
	// do not stop the call (a file the source refuses); nil drops them.
	Warn func(line string)
	// PodSecurity is the manifest dir's standard (config
	// podSecurity.manifestDir), as the daemon holds the dir's pods to it:
	// Apply refuses a pod it refuses. The zero value lets every pod through.
	PodSecurity podsecurity.Policy
}

// Mode is Apply's rule for objects that already exist.
type Mode int

// Apply's modes: kubectl apply's, an API server's create, its update.
const (
	CreateOrReplace Mode = iota
	CreateOnly           // an object a document already declares: ErrExists
	ReplaceOnly          // an object no document declares: ErrNotFound
)

// ErrExists and ErrNotFound are wrapped by Apply's errors for Mode, by
// Lookup's, naming the object.
var (
	ErrExists   = errors.New("already exists")
	ErrNotFound = errors.New("not found")
)

// Action is what Apply did to one object.
type Action string

// Apply's actions, as the CLI prints them. A pod edit that changes its
// identity (manifest.Identity: anything but labels, annotations and
// containers' resources) is Replaced, not Configured: podhost stops the
// pod and starts the new one, as `kubectl replace --force` deletes and
// recreates it (an API server refuses such an edit of a pod).
const (
	Created    Action = "created"
	Configured Action = "configured"
	Replaced   Action = "replaced"
	Unchanged  Action = "unchanged"
)

// Result is Apply's outcome for one object.
type Result struct {
	Object Object
	Action Action
	// File is the path, in the manifest dir, of the file that holds (or,
	// Created, will hold) the object's document.
	File string
	// Written: File was written (false for Unchanged, in a dry run, and for
	// a file Apply did not reach after a failed write).
	Written bool
}

// fileEdit is a pending write of one file in the manifest dir.
type fileEdit struct {
	path    string
	content []byte            // new file (create)
	replace map[string][]byte // object key → new document (existing file)
}

// Apply writes objs (distinct objects: the caller removes duplicates) into
// the manifest dir at dir, created if missing: each one into the file
// that already declares it, replacing just its document (converted to JSON
// in a .json file), or into a new file (see newFileName; ".json" for a
// JSON document). An object whose document declares what the dir's does
// (the same hash, or for a pod the same pod as run: what `get -o yaml`
// adds aside) is Unchanged and not written.
//
// Everything is checked before anything is written, and refused whole: an
// object two files of the dir declare (checkDuplicates), an edit of an immutable ConfigMap or Secret, a pod whose podhost.io/after
// names a pod that will not exist or makes a cycle, an object against
// opts.Mode (errors wrap ErrExists or ErrNotFound); one line per problem,
// naming Object.From. The dir is flocked from its scan to the last write.
// A failed write stops the writes: the results say which files were
// Written, and the error is returned with them.
func Apply(ctx context.Context, dir string, objs []Object, opts Options) ([]Result, error) {
	if !opts.DryRun {
		if err := ensureDir(dir); err != nil {
			return nil, err
		}
		unlock, err := lockDir(ctx, dir)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	snap, err := scan(dir, opts)
	if err != nil {
		return nil, err
	}
	taken, err := dirNames(dir)
	if err != nil {
		return nil, err
	}
	idx := index(snap)
	if objs, err = unpinExported(objs, idx); err != nil {
		return nil, err
	}
	refs, from := make([]Ref, len(objs)), make([]string, len(objs))
	for i, o := range objs {
		refs[i], from[i] = o.Ref, manifest.DisplayName(o.From)
	}
	for _, check := range []func() error{
		func() error { return checkDuplicates(refs, from, snap) },
		func() error { return checkPodSecurity(objs, opts.PodSecurity) },
		func() error { return checkOrder(objs, snap) },
		func() error { return checkImmutable(objs, idx) },
		func() error { return checkMode(objs, idx, opts.Mode) },
		func() error { return checkOwned(objs, idx) },
	} {
		if err := check(); err != nil {
			return nil, err
		}
	}
	results, edits := plan(dir, objs, idx, taken)
	if opts.DryRun {
		return results, nil
	}
	done := map[string]bool{}
	if err = ctx.Err(); err == nil {
		err = applyEdits(edits, done)
	}
	for i := range results {
		results[i].Written = results[i].Action != Unchanged && done[results[i].File]
	}
	return results, err
}

// checkPodSecurity: one line per pod p refuses, naming its input.
func checkPodSecurity(objs []Object, p podsecurity.Policy) error {
	var errs []error
	for _, o := range objs {
		for _, pod := range o.pods() {
			if err := p.Check(pod); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", manifest.DisplayName(o.From), err))
			}
		}
	}
	return errors.Join(errs...)
}

// checkOrder checks the podhost.io/after annotations of the applied pods
// against the pods they will run with (the manifest dir's, replaced by the
// applied versions): a dependency on a pod that does not exist or a cycle
// is an error naming the input, one line each.
func checkOrder(objs []Object, snap source.Snapshot) error {
	all := map[string]*corev1.Pod{}
	for _, p := range snap.Pods {
		all[manifest.FullName(p)] = p
	}
	from := map[*corev1.Pod]string{}
	for _, o := range objs {
		for _, pod := range o.pods() { // none for a ConfigMap or Secret
			all[manifest.FullName(pod)] = pod
			from[pod] = manifest.DisplayName(o.From)
		}
	}
	var errs []error
	for _, pr := range order.Check(slices.Collect(maps.Values(all)), order.CheckOptions{Missing: true}) {
		if name, ok := from[pr.Pod]; ok {
			errs = append(errs, fmt.Errorf("%s: %w", name, pr.Err))
		}
	}
	return errors.Join(errs...)
}

// checkImmutable refuses an apply that changes an immutable ConfigMap or
// Secret (as Kubernetes does): nothing is written.
func checkImmutable(objs []Object, idx map[string]located) error {
	var errs []error
	for _, o := range objs {
		loc, ok := idx[o.key()]
		if ok && loc.obj.immutable && loc.obj.hash != o.hash {
			errs = append(errs, manifest.ErrorList{{File: manifest.DisplayName(o.From),
				Detail: fmt.Sprintf("%s %s/%s is immutable: it cannot be changed (delete it, then apply it again)", o.Kind, o.Namespace, o.Name)}})
		}
	}
	return errors.Join(errs...)
}

// checkMode refuses, per mode, objects that exist or do not.
func checkMode(objs []Object, idx map[string]located, mode Mode) error {
	var errs []error
	for _, o := range objs {
		_, ok := idx[o.key()]
		switch {
		case mode == CreateOnly && ok:
			errs = append(errs, fmt.Errorf("%s: %s %s/%s %w", manifest.DisplayName(o.From), o.Kind, o.Namespace, o.Name, ErrExists))
		case mode == ReplaceOnly && !ok:
			errs = append(errs, fmt.Errorf("%s: %s %s/%s %w", manifest.DisplayName(o.From), o.Kind, o.Namespace, o.Name, ErrNotFound))
		}
	}
	return errors.Join(errs...)
}

// plan decides, per object, created/configured/unchanged and the file
// edits, without touching the disk.
func plan(dir string, objs []Object, idx map[string]located, taken map[string]bool) ([]Result, []*fileEdit) {
	var results []Result
	var edits []*fileEdit
	byPath := map[string]*fileEdit{}
	for _, o := range objs {
		loc, ok := idx[o.key()]
		res := Result{Object: o}
		switch {
		case ok && (loc.obj.hash == o.hash || o.same != "" && loc.obj.same == o.same):
			res.Action, res.File = Unchanged, loc.file
		case ok:
			e := byPath[loc.file]
			if e == nil {
				e = &fileEdit{path: loc.file, replace: map[string][]byte{}}
				byPath[loc.file] = e
				edits = append(edits, e)
			}
			e.replace[o.key()] = o.Doc
			res.Action, res.File = Configured, loc.file
			if replacesPod(loc.obj, o) {
				res.Action = Replaced
			}
		default:
			ext := ".yaml"
			if isJSON(o.Doc) {
				ext = ".json"
			}
			name := newFileName(o.Ref, ext, taken)
			taken[name] = true
			path := filepath.Join(dir, name)
			edits = append(edits, &fileEdit{path: path, content: withNewline(o.Doc)})
			res.Action, res.File = Created, path
		}
		results = append(results, res)
	}
	return results, edits
}

// applyEdits performs the planned writes, recording the paths written in
// done; it stops at the first failure.
func applyEdits(edits []*fileEdit, done map[string]bool) error {
	for _, e := range edits {
		content := e.content
		if e.replace != nil {
			var err error
			if content, err = replaceDocs(e.path, e.replace); err != nil {
				return err
			}
		}
		if err := writeAtomic(e.path, content); err != nil {
			return err
		}
		done[e.path] = true
	}
	return nil
}

// replaceDocs returns the content of path with the documents of the given
// objects replaced (converted to JSON in a .json file).
func replaceDocs(path string, replace map[string][]byte) ([]byte, error) {
	docs, keys, err := fileDocs(path)
	if err != nil {
		return nil, fmt.Errorf("rewrite %s: %w", path, err)
	}
	done := 0
	for i, k := range keys {
		doc, ok := replace[k]
		if !ok {
			continue
		}
		if isJSONFile(path) {
			if doc, err = asJSON(doc); err != nil {
				return nil, fmt.Errorf("rewrite %s: %w", path, err)
			}
		}
		docs[i] = doc
		done++
	}
	if done != len(replace) {
		return nil, fmt.Errorf("rewrite %s: file changed meanwhile; retry", path)
	}
	return joinDocs(docs), nil
}

// replacesPod: the new version of a pod has another identity (or UID)
// than the one it replaces, so podhost stops the pod and starts the new.
func replacesPod(old, o Object) bool {
	if old.Pod == nil || o.Pod == nil {
		return false
	}
	return old.Pod.UID != o.Pod.UID ||
		old.Pod.Annotations[wellknown.AnnotationIdentityHash] != o.Pod.Annotations[wellknown.AnnotationIdentityHash]
}

// unpinExported returns objs with the exported UID of each replacing pod
// dropped: a pod document that carries the UID of the pod it replaces (what
// `get -o yaml` printed), where the file's document names no uid (podhost
// derived it), and that changes the pod as run. Kept, the UID would pin the
// new version to the old one's identity: the rollout history would see one
// revision edited in place and lose the version to go back to. Without it,
// the edit is a new pod with a UID of its own, as any edit of the file that
// replaces the pod. A document that changes nothing (only what the server
// adds differs) stays Unchanged; a uid the file names is the user's and
// stays.
func unpinExported(objs []Object, idx map[string]located) ([]Object, error) {
	out := slices.Clone(objs)
	for i, o := range out {
		loc, ok := idx[o.key()]
		if o.Pod == nil || !ok || loc.obj.Pod == nil || o.Pod.UID != loc.obj.Pod.UID || o.same == loc.obj.same {
			continue
		}
		old := loc.obj.Pod
		if old.UID != manifest.PodUID(old.Namespace, old.Name, manifest.Identity(old)) {
			continue // the file names this uid
		}
		doc := manifest.WithoutUID(o.Doc)
		if bytes.Equal(doc, o.Doc) {
			continue
		}
		n, err := Decode(o.From, doc)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}
