package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/services/api"
)

// DeleteOptions are the inputs of Delete: either Names (in Namespace) or
// Files (whose pods are deleted).
type DeleteOptions struct {
	Names          []string // pod names; "pod/NAME" is accepted too
	Namespace      string   // default "default"
	Files          []string // -f: files, dirs or "-"
	ManifestDir    string
	AllowInsecure  bool
	IgnoreNotFound bool
	// Wait (kubectl delete's default) waits until the deleted pods are gone
	// from the daemon (containers stopped, resources released), at most
	// Timeout (0: no limit). A daemon that is down is not waited for.
	Wait    bool
	Timeout time.Duration
	Socket  string
}

// target is one object to delete: a pod (kind "") or, from -f, a
// ConfigMap or Secret (kind "configmap", "secret").
type target struct{ namespace, name, kind string }

// fullName is the target's object key (see object.key).
func (t target) fullName() string {
	if t.kind != "" {
		return t.kind + ":" + t.namespace + "/" + t.name
	}
	return t.namespace + "/" + t.name
}

// kindName is what delete prints for the target's kind.
func (t target) kindName() string {
	if t.kind != "" {
		return t.kind
	}
	return "pod"
}

// Delete removes each pod's document from the manifest dir, whatever file
// holds it: the whole file when it declares only that pod, else the file is
// rewritten atomically without that document. It prints `pod "NAME" deleted`
// per pod, in the order given; each missing one is a NotFoundError (`pods
// "NAME" not found`) unless IgnoreNotFound. Found pods are deleted even when
// others are missing, as with kubectl.
func Delete(ctx context.Context, opts DeleteOptions, s IOStreams) error {
	targets, err := deleteTargets(opts, s)
	if err != nil {
		return err
	}
	release, err := lockDir(ctx, opts.ManifestDir)
	if err != nil {
		return err
	}
	unlock := sync.OnceFunc(release)
	defer unlock()
	snap, err := scanDir(opts.ManifestDir, opts.AllowInsecure, s.ErrOut)
	if err != nil {
		return err
	}
	idx := indexObjects(snap)
	var errs []error
	byFile := map[string][]target{}
	for _, t := range targets {
		loc, ok := idx[t.fullName()]
		if !ok {
			if !opts.IgnoreNotFound {
				errs = append(errs, &NotFoundError{Resource: t.kindName() + "s", Name: t.name})
			}
			continue
		}
		byFile[loc.file] = append(byFile[loc.file], t)
	}
	removed := map[target]bool{}
	for _, file := range sortedKeys(byFile) {
		if err := ctx.Err(); err != nil {
			errs = []error{err} // interrupted: what was removed is still printed
			break
		}
		if err := removeDocs(file, byFile[file]); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range byFile[file] {
			removed[t] = true
		}
	}
	var pods []target
	for _, t := range targets {
		if removed[t] {
			fmt.Fprintf(s.Out, "%s %q deleted\n", t.kindName(), t.name)
			if t.kind == "" {
				pods = append(pods, t)
			}
		}
	}
	if opts.Wait && len(pods) > 0 && ctx.Err() == nil {
		unlock() // others may write the dir while this waits
		if err := waitGone(ctx, opts, pods, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waitGone waits, as kubectl delete does, until the deleted pods are gone
// from the daemon's API: a pod stays there, Terminating, until its
// containers stopped and its sandbox, cgroup and volumes are gone.
// A daemon that is down, or goes down, is not waited for: it ends the
// terminations when it starts.
func waitGone(ctx context.Context, opts DeleteOptions, pods []target, s IOStreams) error {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout) // for all the namespaces
		defer cancel()
	}
	byNS := map[string][]string{}
	for _, t := range pods {
		byNS[t.namespace] = append(byNS[t.namespace], t.name)
	}
	for _, ns := range sortedKeys(byNS) {
		o := WaitForOptions{Socket: opts.Socket, Namespace: ns, Names: byNS[ns], For: "delete", Timeout: -1, StopIfDown: true}
		err := WaitFor(ctx, o, IOStreams{Out: io.Discard, ErrOut: s.ErrOut})
		switch {
		case errors.Is(err, api.ErrDaemonDown):
			return nil
		case err != nil:
			return err
		}
	}
	return nil
}

// deleteTargets resolves names or files into pods to delete (deduplicated,
// in order).
func deleteTargets(opts DeleteOptions, s IOStreams) ([]target, error) {
	switch {
	case len(opts.Names) > 0 && len(opts.Files) > 0:
		return nil, errors.New("specify pod names or -f, not both")
	case len(opts.Names) == 0 && len(opts.Files) == 0:
		return nil, errors.New("must specify a pod NAME or -f FILE")
	}
	var out []target
	seen := map[target]bool{}
	add := func(t target) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(opts.Files) > 0 {
		items, err := decodeInputs(opts.Files, s.In)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			kind := ""
			if it.obj.pod == nil {
				kind = it.obj.kind
			}
			add(target{it.obj.namespace, it.obj.name, kind})
		}
		return out, nil
	}
	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	if err := manifest.ValidateNamespace(ns); err != nil {
		return nil, err
	}
	names, kind := opts.Names, ""
	if k, ok := kindOf(names[0]); ok && len(names) > 1 { // kubectl's "delete configmap NAME..."
		names, kind = names[1:], k
	}
	for _, n := range names {
		k := kind
		if i := strings.Index(n, "/"); i > 0 { // "pod/web", "configmap/cfg"
			if kk, ok := kindOf(n[:i]); ok {
				k, n = kk, n[i+1:]
			}
		}
		if err := manifest.ValidatePodName(n); err != nil { // ConfigMaps and Secrets: the same DNS-1123 subdomain rule
			return nil, err
		}
		add(target{ns, n, k})
	}
	return out, nil
}

// kindOf maps the resource words kubectl users type to a target kind: ""
// for pods, "configmap", "secret".
func kindOf(word string) (string, bool) {
	switch strings.ToLower(word) {
	case "pod", "pods", "po":
		return "", true
	}
	switch DataResource(word) {
	case "configmaps":
		return "configmap", true
	case "secrets":
		return "secret", true
	}
	return "", false
}

// removeDocs deletes the documents of the targets from file: removes the
// file when nothing is left, else rewrites it atomically.
func removeDocs(file string, targets []target) error {
	docs, keys, err := fileDocs(file)
	if err != nil {
		return fmt.Errorf("delete from %s: %w", file, err)
	}
	drop := map[string]bool{}
	for _, t := range targets {
		drop[t.fullName()] = true
	}
	var keep [][]byte
	for i, k := range keys {
		if !drop[k] {
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
