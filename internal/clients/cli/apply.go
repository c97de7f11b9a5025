package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/order"
	"github.com/podhost/podhost/internal/desired/source"
)

// DefaultWaitTimeout is the timeout of a bare `apply --wait`.
const DefaultWaitTimeout = 2 * time.Minute

// ApplyOptions are the inputs of Apply.
type ApplyOptions struct {
	Files         []string // -f: files, dirs (their manifests) or "-" (stdin)
	ManifestDir   string
	AllowInsecure bool // manifest dir permission checks off
	DryRun        bool
	// WaitTimeout > 0 asks to wait until the pods run (done by the caller
	// through the API; Apply itself never waits).
	WaitTimeout time.Duration
}

// Action is what apply did to one pod.
type Action string

// Apply actions, as printed.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
)

// ApplyResult is the outcome for one object.
type ApplyResult struct {
	Pod    *corev1.Pod // the pod as decoded from the input (UID and hash set); nil for a ConfigMap or Secret
	Kind   string      // "pod", "configmap" or "secret"
	Name   string
	Action Action
	File   string // the file in the manifest dir that holds it
}

// item is one object from the inputs with the document that declared it.
type item struct {
	obj  object
	doc  []byte
	from string // input name
}

// fileEdit is a pending write of one file in the manifest dir.
type fileEdit struct {
	path    string
	content []byte            // new file (create)
	replace map[string][]byte // full name → new document (existing file)
}

// Apply validates every input (all or nothing: on any error nothing is
// written and the error lists every problem, one line each), then writes each
// pod into the manifest dir: a new file "<name>.yaml" (default namespace) or
// "<namespace>_<name>.yaml" (".json" for JSON input, kept as given), or the
// file that already declares the pod, replacing just its document. It prints
// "pod/NAME created|configured|unchanged" per pod. The manifest dir is
// flocked from the scan to the last write, so concurrent runs serialize.
func Apply(ctx context.Context, opts ApplyOptions, s IOStreams) ([]ApplyResult, error) {
	items, err := decodeInputs(opts.Files, s.In)
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		if err := ensureDir(opts.ManifestDir); err != nil {
			return nil, err
		}
		unlock, err := lockDir(ctx, opts.ManifestDir)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	snap, err := scanDir(opts.ManifestDir, opts.AllowInsecure, s.ErrOut)
	if err != nil {
		return nil, err
	}
	if err := checkOrder(items, snap); err != nil {
		return nil, err
	}
	taken, err := dirNames(opts.ManifestDir)
	if err != nil {
		return nil, err
	}
	idx := indexObjects(snap)
	if err := checkImmutable(items, idx); err != nil {
		return nil, err
	}
	results, edits := planApply(opts.ManifestDir, items, idx, taken)
	suffix, done := " (dry run)", map[string]bool{}
	if !opts.DryRun {
		suffix = ""
		if err = ctx.Err(); err == nil {
			err = applyEdits(edits, done)
		}
	}
	for _, r := range results {
		if opts.DryRun || r.Action == Unchanged || done[r.File] {
			fmt.Fprintf(s.Out, "%s/%s %s%s\n", r.Kind, r.Name, r.Action, suffix)
		}
	}
	if err != nil {
		return nil, err
	}
	return results, nil
}

// checkOrder checks the podhost.io/after annotations of the applied pods
// against the pods they will run with (the manifest dir's, replaced by the
// applied versions): a dependency on a pod that does not exist or a cycle
// is an error naming the input, one line each.
func checkOrder(items []item, snap source.Snapshot) error {
	all := map[string]*corev1.Pod{}
	for _, p := range snap.Pods {
		all[manifest.FullName(p)] = p
	}
	from := map[*corev1.Pod]string{}
	for _, it := range items {
		if it.obj.pod == nil {
			continue // a ConfigMap or Secret
		}
		all[manifest.FullName(it.obj.pod)] = it.obj.pod
		from[it.obj.pod] = displayName(it.from)
	}
	var errs []error
	for _, pr := range order.Check(slices.Collect(maps.Values(all)), order.CheckOptions{Missing: true}) {
		if name, ok := from[pr.Pod]; ok {
			errs = append(errs, fmt.Errorf("%s: %w", name, pr.Err))
		}
	}
	return errors.Join(errs...)
}

// decodeInputs reads and validates every input and rejects duplicate pods
// across them. It returns every problem found.
func decodeInputs(files []string, stdin io.Reader) ([]item, error) {
	inputs, err := readInputs(files, stdin)
	errs := []error{}
	if err != nil {
		errs = append(errs, err)
	}
	var items []item
	first := map[string]string{} // object key → display name of its input
	for _, in := range inputs {
		got, x, err := decodeInput(in)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, it := range got {
			if other, dup := first[it.obj.key]; dup {
				errs = append(errs, x.Locate(dupError(in, i, len(got), it.obj, other)))
				continue
			}
			first[it.obj.key] = displayName(in.name)
			items = append(items, it)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(items) == 0 {
		return nil, errors.New("no objects passed to apply")
	}
	return items, nil
}

// decodeInput validates one input and splits it into its objects, one
// document each; a List (what `get -o yaml|json` prints) counts as its
// items, as with kubectl. x locates errors about the objects in the input.
func decodeInput(in input) (items []item, x manifest.Expanded, err error) {
	if x, err = manifest.ExpandLists(in.name, in.data); err != nil {
		return nil, x, err
	}
	if _, err := manifest.DecodeObjects(in.name, x.Data); err != nil {
		return nil, x, x.Locate(err)
	}
	docs, err := manifest.Docs(x.Data)
	if err != nil {
		return nil, x, fileErr(in.name, "%v", err)
	}
	items = make([]item, 0, len(docs))
	for _, d := range docs {
		d = manifest.CleanExported(d) // get's output: status and podhost's annotations are not written
		objs, err := docObjects(in.name, d)
		if err != nil {
			return nil, x, x.Locate(err)
		}
		items = append(items, item{obj: objs[0], doc: d, from: in.name})
	}
	return items, x, nil
}

func dupError(in input, i, n int, obj object, other string) error {
	what := obj.kind
	if what == "configmap" {
		what = "ConfigMap"
	}
	fe := &manifest.FieldError{
		File:   displayName(in.name),
		Field:  "metadata.name",
		Detail: fmt.Sprintf("Duplicate value: %q: %s %s/%s is already defined in %s", obj.name, what, obj.namespace, obj.name, other),
	}
	if n > 1 {
		fe.Doc = i + 1
	}
	return manifest.ErrorList{fe}
}

func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return filepath.Base(name)
}

// planApply decides, per pod, created/configured/unchanged and the file
// edits, without touching the disk.
func planApply(dir string, items []item, idx map[string]locatedObject, taken map[string]bool) ([]ApplyResult, []*fileEdit) {
	var results []ApplyResult
	var edits []*fileEdit
	byPath := map[string]*fileEdit{}
	for _, it := range items {
		fn := it.obj.key
		loc, ok := idx[fn]
		res := ApplyResult{Pod: it.obj.pod, Kind: it.obj.kind, Name: it.obj.name}
		switch {
		case ok && (loc.obj.hash == it.obj.hash || it.obj.same != "" && loc.obj.same == it.obj.same):
			res.Action, res.File = Unchanged, loc.file
			results = append(results, res)
		case ok:
			e := byPath[loc.file]
			if e == nil {
				e = &fileEdit{path: loc.file, replace: map[string][]byte{}}
				byPath[loc.file] = e
				edits = append(edits, e)
			}
			e.replace[fn] = it.doc
			res.Action, res.File = Configured, loc.file
			results = append(results, res)
		default:
			ext := ".yaml"
			if isJSON(it.doc) {
				ext = ".json"
			}
			name := newObjectFileName(it.obj, ext, taken)
			taken[name] = true
			path := filepath.Join(dir, name)
			edits = append(edits, &fileEdit{path: path, content: withNewline(it.doc)})
			res.Action, res.File = Created, path
			results = append(results, res)
		}
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
// pods replaced (converted to JSON in a .json file).
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

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkImmutable refuses an apply that changes an immutable ConfigMap or
// Secret (as Kubernetes does): nothing is written.
func checkImmutable(items []item, idx map[string]locatedObject) error {
	var errs []error
	for _, it := range items {
		loc, ok := idx[it.obj.key]
		if ok && loc.obj.immutable && loc.obj.hash != it.obj.hash {
			errs = append(errs, fileErr(it.from, "%s %s/%s is immutable: it cannot be changed (delete it, then apply it again)",
				it.obj.kind, it.obj.namespace, it.obj.name))
		}
	}
	return errors.Join(errs...)
}
