package manifestcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/wait"
	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/manifestdir"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/services/api"
)

// DeleteOptions are the inputs of Delete: Names (in Namespace), Files
// (whose objects are deleted), or All / Selector (the pods, or the kind
// Names gives, of Namespace in the manifest dir).
type DeleteOptions struct {
	Names     []string // pod names; "pod/NAME" is accepted too
	Namespace string   // default "default"
	// NamespaceSet: -n was given, so -f's documents are taken in Namespace
	// (one naming another is an error), as kubectl delete -f -n.
	NamespaceSet   bool
	Files          []string // -f: files, dirs or "-"
	All            bool     // --all: every object of the kind in Namespace
	Selector       string   // -l: the objects of the kind in Namespace whose labels match
	ManifestDir    string
	AllowInsecure  bool
	IgnoreNotFound bool
	// GracePeriod is kubectl's --grace-period (nil or -1: the pod's own),
	// with Now (1) and Force (0: no wait, "force deleted") as kubectl
	// combines them (deleteGrace).
	GracePeriod *int
	Now, Force  bool
	DryRun      cmdutil.DryRun
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
// others are missing, as with kubectl. A grace period (--grace-period,
// --now, --force) reaches the daemon before the documents go, as the kube
// API's DELETE carries it.
func Delete(ctx context.Context, opts DeleteOptions, s cmdutil.IOStreams) error {
	grace, err := deleteGrace(&opts, s)
	if err != nil {
		return err
	}
	targets, err := deleteTargets(opts, s)
	if err != nil {
		return err
	}
	if len(targets) == 0 { // --all or -l selected nothing
		fmt.Fprintln(s.Out, "No resources found")
		return nil
	}
	mopts := manifestdir.Options{AllowInsecure: opts.AllowInsecure, Warn: cmdutil.WarnTo(s.ErrOut), DryRun: opts.DryRun != cmdutil.DryRunNone}
	if grace >= 0 && !mopts.DryRun {
		if err := sendGraces(ctx, opts, targets, grace, mopts); err != nil {
			return err
		}
	}
	removals, err := manifestdir.Delete(ctx, opts.ManifestDir, targets, mopts)
	if removals == nil && err != nil {
		return err
	}
	verb := "deleted"
	if grace == 0 {
		verb = "force deleted"
	}
	var errs []error
	var pods []target
	for _, r := range removals {
		switch {
		case r.File == "" && !opts.IgnoreNotFound:
			errs = append(errs, &cmdutil.NotFoundError{Resource: string(r.Ref.Kind) + "s", Name: r.Ref.Name})
		case r.Removed || mopts.DryRun && r.File != "":
			fmt.Fprintf(s.Out, "%s %q %s%s\n", r.Ref.Kind, r.Ref.Name, verb, opts.DryRun.Suffix())
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
	if opts.Wait && grace != 0 && !mopts.DryRun && len(pods) > 0 && ctx.Err() == nil {
		if err := waitGone(ctx, opts, pods, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteGrace combines --grace-period, --now and --force as kubectl
// delete's Complete and Validate do: the grace period to send (-1: none),
// kubectl's errors, and its warning for a force deletion. --all and -l
// ignore missing objects unless --ignore-not-found was given.
func deleteGrace(opts *DeleteOptions, s cmdutil.IOStreams) (int, error) {
	g := -1
	if opts.GracePeriod != nil {
		g = *opts.GracePeriod
	}
	if opts.Now {
		if g != -1 {
			return 0, errors.New("--now and --grace-period cannot be specified together")
		}
		g = 1
	}
	if g == 0 && !opts.Force {
		g = 1 // kubectl: --grace-period=0 is 1 unless --force
	}
	if opts.Force && g < 0 {
		g = 0
	}
	switch {
	case opts.All && opts.Selector != "":
		return 0, errors.New("cannot set --all and --selector at the same time")
	case g == 0 && opts.Force:
		fmt.Fprintln(s.ErrOut, "Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.")
	case g > 0 && opts.Force:
		return 0, errors.New("--force and --grace-period greater than 0 cannot be specified together")
	}
	return g, nil
}

// sendGraces tells the daemon the grace period of each pod about to be
// deleted (the kubelet's minimum, 1 s, for 0). It first plans the delete
// (a dry run: refusals such as a duplicate come before anything is sent).
// A daemon that is down, or a pod it does not run, needs none.
func sendGraces(ctx context.Context, opts DeleteOptions, targets []target, grace int, mopts manifestdir.Options) error {
	mopts.DryRun, mopts.Warn = true, nil
	plan, err := manifestdir.Delete(ctx, opts.ManifestDir, targets, mopts)
	if err != nil {
		return err
	}
	c := api.NewClient(opts.Socket)
	for _, r := range plan {
		if r.File == "" || r.Ref.Kind != manifestdir.Pod {
			continue
		}
		err := c.SetDeletionGrace(ctx, r.Ref.Namespace, r.Ref.Name, int64(grace))
		switch {
		case errors.Is(err, api.ErrDaemonDown):
			return nil
		case err != nil && !errors.Is(err, api.ErrNotFound):
			return fmt.Errorf("grace period of pod %s/%s: %w", r.Ref.Namespace, r.Ref.Name, err)
		}
	}
	return nil
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

// deleteTargets resolves names, files or a selection into the objects to
// delete (deduplicated, in order).
func deleteTargets(opts DeleteOptions, s cmdutil.IOStreams) ([]target, error) {
	selecting := opts.All || opts.Selector != ""
	switch {
	case selecting && len(opts.Files) > 0:
		return nil, errors.New("--all and -l select from the manifest dir: not with -f")
	case selecting:
		return selectTargets(opts)
	case len(opts.Names) > 0 && len(opts.Files) > 0:
		return nil, errors.New("specify pod names or -f, not both")
	case len(opts.Names) == 0 && len(opts.Files) == 0:
		return nil, errors.New("must specify a pod NAME, -f FILE, -l SELECTOR or --all")
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
		ns := ""
		if opts.NamespaceSet {
			ns = opts.Namespace
		}
		items, err := decodeInputs(opts.Files, ns, s.In)
		if err != nil {
			return nil, err
		}
		for _, o := range items {
			add(o.Ref)
		}
		return out, nil
	}
	ns, err := deleteNamespace(opts)
	if err != nil {
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

func deleteNamespace(opts DeleteOptions) (string, error) {
	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns, manifest.ValidateNamespace(ns)
}

// selectTargets: --all or -l, the objects of one kind (Names: at most a
// kind word, default pods) in the namespace, as the manifest dir declares
// them, in its order.
func selectTargets(opts DeleteOptions) ([]target, error) {
	kind := manifestdir.Pod
	for i, n := range opts.Names {
		k, ok := kindOf(n)
		if !ok || i > 0 {
			return nil, fmt.Errorf("--all and -l take a resource type (pods, configmaps, secrets, services, serviceaccounts), not names: %q", n)
		}
		kind = k
	}
	ns, err := deleteNamespace(opts)
	if err != nil {
		return nil, err
	}
	sel, err := labels.Parse(opts.Selector)
	if err != nil {
		return nil, fmt.Errorf("-l: %w", err)
	}
	snap, err := source.Scan(opts.ManifestDir, opts.AllowInsecure)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var out []target
	add := func(k manifestdir.Kind, m metav1.ObjectMeta) {
		if k == kind && m.Namespace == ns && sel.Matches(labels.Set(m.Labels)) {
			out = append(out, target{Kind: k, Namespace: m.Namespace, Name: m.Name})
		}
	}
	for _, p := range snap.Pods {
		add(manifestdir.Pod, p.ObjectMeta)
	}
	for _, cm := range snap.ConfigMaps {
		add(manifestdir.ConfigMap, cm.ObjectMeta)
	}
	for _, sec := range snap.Secrets {
		add(manifestdir.Secret, sec.ObjectMeta)
	}
	for _, w := range snap.Workloads {
		add(manifestdir.Kind(strings.ToLower(w.Kind)), *w.Meta())
	}
	for _, svc := range snap.Services {
		add(manifestdir.Service, svc.ObjectMeta)
	}
	for _, sa := range snap.ServiceAccounts {
		add(manifestdir.ServiceAccount, sa.ObjectMeta)
	}
	return out, nil
}

// kindOf maps the resource words kubectl users type to a target kind.
func kindOf(word string) (manifestdir.Kind, bool) {
	switch strings.ToLower(word) {
	case "pod", "pods", "po":
		return manifestdir.Pod, true
	case "service", "services", "svc":
		return manifestdir.Service, true
	case "serviceaccount", "serviceaccounts", "sa":
		return manifestdir.ServiceAccount, true
	}
	if k, ok := workloadKindOf(word); ok {
		return k, true
	}
	switch cmdutil.DataResource(word) {
	case "configmaps":
		return manifestdir.ConfigMap, true
	case "secrets":
		return manifestdir.Secret, true
	}
	return "", false
}
