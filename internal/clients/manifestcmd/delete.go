package manifestcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/wait"
	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/manifestdir"
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

// target is one object to delete: a pod or, from -f, a ConfigMap or
// Secret.
type target = manifestdir.Ref

// Delete removes each pod's document from the manifest dir, whatever file
// holds it: the whole file when it declares only that pod, else the file is
// rewritten atomically without that document. It prints `pod "NAME" deleted`
// per pod, in the order given; each missing one is a NotFoundError (`pods
// "NAME" not found`) unless IgnoreNotFound. Found pods are deleted even when
// others are missing, as with kubectl.
func Delete(ctx context.Context, opts DeleteOptions, s cmdutil.IOStreams) error {
	targets, err := deleteTargets(opts, s)
	if err != nil {
		return err
	}
	removals, err := manifestdir.Delete(ctx, opts.ManifestDir, targets, manifestdir.Options{AllowInsecure: opts.AllowInsecure, Warn: cmdutil.WarnTo(s.ErrOut)})
	if removals == nil && err != nil {
		return err
	}
	var errs []error
	var pods []target
	for _, r := range removals {
		switch {
		case r.File == "" && !opts.IgnoreNotFound:
			errs = append(errs, &cmdutil.NotFoundError{Resource: string(r.Ref.Kind) + "s", Name: r.Ref.Name})
		case r.Removed:
			fmt.Fprintf(s.Out, "%s %q deleted\n", r.Ref.Kind, r.Ref.Name)
			if r.Ref.Kind == manifestdir.Pod {
				pods = append(pods, r.Ref)
			}
		}
	}
	if err != nil {
		errs = append(errs, err)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		errs = []error{err} // interrupted: what was removed is still printed
	}
	if opts.Wait && len(pods) > 0 && ctx.Err() == nil {
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
func waitGone(ctx context.Context, opts DeleteOptions, pods []target, s cmdutil.IOStreams) error {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout) // for all the namespaces
		defer cancel()
	}
	byNS := map[string][]string{}
	for _, t := range pods {
		byNS[t.Namespace] = append(byNS[t.Namespace], t.Name)
	}
	for _, ns := range sortedKeys(byNS) {
		o := wait.ForOptions{Socket: opts.Socket, Namespace: ns, Names: byNS[ns], For: "delete", Timeout: -1, StopIfDown: true}
		err := wait.For(ctx, o, cmdutil.IOStreams{Out: io.Discard, ErrOut: s.ErrOut})
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
func deleteTargets(opts DeleteOptions, s cmdutil.IOStreams) ([]target, error) {
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
		for _, o := range items {
			add(o.Ref)
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
	names, kind := opts.Names, manifestdir.Pod
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
		add(target{Kind: k, Namespace: ns, Name: n})
	}
	return out, nil
}

// kindOf maps the resource words kubectl users type to a target kind.
func kindOf(word string) (manifestdir.Kind, bool) {
	switch strings.ToLower(word) {
	case "pod", "pods", "po":
		return manifestdir.Pod, true
	}
	switch cmdutil.DataResource(word) {
	case "configmaps":
		return manifestdir.ConfigMap, true
	case "secrets":
		return manifestdir.Secret, true
	}
	return "", false
}
