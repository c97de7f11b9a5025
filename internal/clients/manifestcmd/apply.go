package manifestcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/desired/manifest"
	"github.com/podhost/podhost/internal/desired/manifestdir"
	"github.com/podhost/podhost/internal/desired/podsecurity"
)

// DefaultWaitTimeout is the timeout of a bare `apply --wait`.
const DefaultWaitTimeout = 2 * time.Minute

// ApplyOptions are the inputs of Apply.
type ApplyOptions struct {
	Files         []string // -f: files, dirs (their manifests) or "-" (stdin)
	ManifestDir   string
	AllowInsecure bool // manifest dir permission checks off
	// PodSecurity is the manifest dir's standard (config
	// podSecurity.manifestDir): a pod it refuses is an error naming its
	// input. The zero value lets every pod through.
	PodSecurity podsecurity.Policy
	DryRun      cmdutil.DryRun
	// Namespace is -n: documents that name no namespace are applied in it
	// (written into them), one naming another is an error; "": not given.
	Namespace string
	// WaitTimeout > 0 asks to wait until the pods run (done by the caller
	// through the API; Apply itself never waits).
	WaitTimeout time.Duration
}

// Action is what apply did to one object.
type Action = manifestdir.Action

// Apply actions, as printed.
const (
	Created    = manifestdir.Created
	Configured = manifestdir.Configured
	Replaced   = manifestdir.Replaced
	Unchanged  = manifestdir.Unchanged
)

// ApplyResult is the outcome for one object.
type ApplyResult struct {
	Pod *corev1.Pod // the pod as decoded from the input (UID and hash set); nil for a ConfigMap or Secret
	// Pods are a workload's pods once rolled out (--wait waits for them);
	// none for a Job, whose pods run to completion, or a CronJob.
	Pods   []*corev1.Pod
	Kind   string // "pod", "configmap", "secret" or a workload kind (manifestdir.Deployment, ...)
	Name   string
	Action Action
	File   string // the file in the manifest dir that holds it
}

// Apply validates every input (all or nothing: on any error nothing is
// written and the error lists every problem, one line each), then writes each
// pod into the manifest dir: a new file "<name>.yaml" (default namespace) or
// "<namespace>_<name>.yaml" (".json" for JSON input, kept as given), or the
// file that already declares the pod, replacing just its document. It prints
// "pod/NAME created|configured|unchanged" per pod. The manifest dir is
// flocked from the scan to the last write, so concurrent runs serialize.
func Apply(ctx context.Context, opts ApplyOptions, s cmdutil.IOStreams) ([]ApplyResult, error) {
	items, err := decodeInputs(opts.Files, opts.Namespace, s.In)
	if err != nil {
		return nil, err
	}
	dry := opts.DryRun != cmdutil.DryRunNone
	rs, err := manifestdir.Apply(ctx, opts.ManifestDir, items, manifestdir.Options{
		AllowInsecure: opts.AllowInsecure, DryRun: dry, Warn: cmdutil.WarnTo(s.ErrOut), PodSecurity: opts.PodSecurity})
	suffix := opts.DryRun.Suffix()
	var results []ApplyResult
	for _, r := range rs {
		if dry || r.Action == Unchanged || r.Written {
			fmt.Fprintf(s.Out, "%s/%s %s%s\n", r.Object.Kind, r.Object.Name, r.Action, suffix)
		}
		res := ApplyResult{Pod: r.Object.Pod, Kind: string(r.Object.Kind), Name: r.Object.Name, Action: r.Action, File: r.File}
		if w := r.Object.Workload; w != nil && w.Job == nil && w.CronJob == nil {
			res.Pods = w.Pods
		}
		results = append(results, res)
	}
	if err != nil {
		return nil, err
	}
	return results, nil
}

// decodeInputs reads and validates every input and rejects duplicate pods
// across them; ns is -n (inNamespace; "": not given). It returns every
// problem found.
func decodeInputs(files []string, ns string, stdin io.Reader) ([]manifestdir.Object, error) {
	inputs, err := readInputs(files, stdin)
	errs := []error{}
	if err != nil {
		errs = append(errs, err)
	}
	var items []manifestdir.Object
	first := map[manifestdir.Ref]string{} // object → display name of its input
	for _, in := range inputs {
		got, x, err := decodeInput(in, ns)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, o := range got {
			if other, dup := first[o.Ref]; dup {
				errs = append(errs, x.Locate(dupError(in, i, len(got), o.Ref, other)))
				continue
			}
			first[o.Ref] = manifest.DisplayName(in.name)
			items = append(items, o)
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
func decodeInput(in input, ns string) (objs []manifestdir.Object, x manifest.Expanded, err error) {
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
	objs = make([]manifestdir.Object, 0, len(docs))
	for _, d := range docs {
		d = manifest.CleanExported(d) // get's output: status and podhost's annotations are not written
		if ns != "" {
			if d, err = inNamespace(in.name, d, ns); err != nil {
				return nil, x, err
			}
		}
		o, err := manifestdir.Decode(in.name, d)
		if err != nil {
			return nil, x, x.Locate(err)
		}
		objs = append(objs, o)
	}
	return objs, x, nil
}

func dupError(in input, i, n int, r manifestdir.Ref, other string) error {
	what := string(r.Kind)
	if r.Kind == manifestdir.ConfigMap {
		what = "ConfigMap"
	}
	fe := &manifest.FieldError{
		File:   manifest.DisplayName(in.name),
		Field:  "metadata.name",
		Detail: fmt.Sprintf("Duplicate value: %q: %s %s/%s is already defined in %s", r.Name, what, r.Namespace, r.Name, other),
	}
	if n > 1 {
		fe.Doc = i + 1
	}
	return manifest.ErrorList{fe}
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
