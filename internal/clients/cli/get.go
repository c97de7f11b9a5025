package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/services/api"
)

// GetOptions select pods for get and describe.
type GetOptions struct {
	Socket    string
	Namespace string   // the pods' namespace (-n; the commands default it to "default"); "" = every namespace (-A)
	Names     []string // none: every pod; else these, in order (missing ones are NotFoundErrors)
	Output    string   // "", wide, json, yaml, name, jsonpath=…, custom-columns=…
	Watch     bool     // -w: the table, then a line per change
	Selector  string   // -l: a label selector, as kubectl's (get)

	// Printer flags, as kubectl get's: label columns (the table's and the
	// watch's), no header line (those and custom-columns).
	ShowLabels   bool     // --show-labels: a LABELS column, last
	LabelColumns []string // -L: a column per label key
	NoHeaders    bool     // --no-headers

	SortBy string // --sort-by: a JSONPath, as kubectl's

	HideEvents bool // describe --show-events=false: no Events section (kubectl shows each pod's)
}

// matcher is the pods o selects: namespace, name and label selector.
func (o GetOptions) matcher() (func(*corev1.Pod) bool, error) {
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return nil, fmt.Errorf("unable to parse the label selector %q: %w", o.Selector, err)
	}
	return func(p *corev1.Pod) bool {
		return (o.Namespace == "" || p.Namespace == o.Namespace) && (len(o.Names) == 0 || slices.Contains(o.Names, p.Name)) && sel.Matches(labels.Set(p.Labels))
	}, nil
}

// CheckResource accepts the resource names kubectl users type for pods.
func CheckResource(r string) error {
	switch r {
	case "pods", "pod", "po":
		return nil
	}
	return fmt.Errorf("the server doesn't have a resource type %q (podhost serves pods)", r)
}

// Get prints pods as a table, JSON (a core/v1 PodList), YAML or names. As
// kubectl get, a named pod that is missing is a NotFoundError, returned
// after the others are printed (none are with -w, or when it was the only
// name); -w watches one name at most (several: the table, then kubectl's
// error).
func Get(ctx context.Context, o GetOptions, s cmdutil.IOStreams) error {
	if err := o.validate(); err != nil {
		return err
	}
	match, err := o.matcher()
	if err != nil {
		return err
	}
	sorter, err := printers.NewPodSorter(o.SortBy)
	if err != nil {
		return err
	}
	c := cmdutil.NewClient(o.Socket, s)
	list, err := c.ListPods(ctx)
	if err != nil {
		return err
	}
	pods, missing := cmdutil.ByName(filterPods(list.Items, match), o.Names, func(p *corev1.Pod) string { return p.Name }, "pods")
	warnFiles(ctx, c, pods, len(o.Names) == 0 && strings.TrimSpace(o.Selector) == "", s)
	if len(missing) > 0 && (o.Watch || len(o.Names) == 1) {
		return errors.Join(missing...)
	}
	if o.sorts(pods) {
		if err := sorter.Sort(pods); err != nil {
			return errors.Join(append([]error{err}, missing...)...)
		}
	}
	if o.Watch {
		if o.SortBy != "" { // kubectl's words; it, too, sorts only the first table
			fmt.Fprintln(s.ErrOut, "warning: --watch or --watch-only requested, --sort-by will be ignored")
		}
		if len(o.Names) > 1 { // as kubectl get -w: the table, then its refusal to watch several objects
			newPodWatcher(printers.NewLineWriter(s.Out), o, match, time.Now).initial(pods)
			return errWatchNames
		}
		return watchPods(ctx, c, o, match, pods, s)
	}
	return errors.Join(append([]error{o.print(pods, len(missing) > 0, s)}, missing...)...)
}

// errWatchNames is kubectl get -w's error for several names (cli-runtime's
// Result.Watch), after the table of the named objects.
var errWatchNames = errors.New("you may only watch a single resource or type of resource at a time")

// validate checks the output format, the flags that go with it and the
// names, before the daemon is asked.
func (o GetOptions) validate() error {
	if err := o.validateOutput(); err != nil {
		return err
	}
	if o.Watch && !o.table() {
		return fmt.Errorf("--watch prints the table: -o %s is not supported with it by podhost", o.Output)
	}
	if strings.TrimSpace(o.Selector) != "" && len(o.Names) > 0 {
		return errNameAndSelector
	}
	return cmdutil.ValidatePodNames(o.Namespace, o.Names)
}

// validateOutput checks the output format and --show-labels, which only
// the table takes (pods and nodes).
func (o GetOptions) validateOutput() error {
	tmplFormat, _ := printers.TemplateFormat(o.Output)
	switch o.Output {
	case "", "wide", "json", "yaml", "name":
	default:
		if f, _, _ := strings.Cut(o.Output, "="); slices.Contains(kubectlOutputs, f) {
			return cmdutil.KubectlHint("-o "+f, "get pods -o "+o.Output)
		}
		if tmplFormat == "" {
			return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: custom-columns,json,jsonpath,name,wide,yaml", o.Output)
		}
	}
	if o.ShowLabels && !o.table() {
		return fmt.Errorf("--show-labels option cannot be used with %s printer", o.Output)
	}
	return nil
}

// kubectlOutputs are kubectl get's output formats podhost's get lacks.
var kubectlOutputs = []string{"go-template", "go-template-file", "template", "templatefile", "jsonpath-file", "jsonpath-as-json"}

// print writes pods in o's output format; "No resources found" when there
// are none, unless names were missing (their errors say it).
func (o GetOptions) print(pods []corev1.Pod, missing bool, s cmdutil.IOStreams) error {
	if done, err := printStructured(o, s, pods, o.listOrPod(pods)); done {
		return err
	}
	switch o.Output {
	case "name":
		podview.Names(s.Out, pods)
		return nil
	}
	if len(pods) == 0 {
		if !missing {
			cmdutil.NoResources(s.ErrOut, o.Namespace)
		}
		return nil
	}
	return o.columns().print(s.Out, pods, o.NoHeaders, time.Now())
}

// table reports whether o prints the pods table (kubectl's human-readable
// printer): the default output, or wide.
func (o GetOptions) table() bool {
	return o.Output == "" || o.Output == "wide"
}

// sorts reports whether --sort-by applies to pods, as with kubectl get: to
// the table (even of one named pod), to the first table of a watch when it
// has more than one row (not to the lines after it), and to the List the
// other outputs print (not to one object).
func (o GetOptions) sorts(pods []corev1.Pod) bool {
	switch {
	case o.Watch:
		return len(pods) > 1
	case o.table():
		return true
	}
	return !o.oneObject(pods)
}

// printStructured prints items in o's jsonpath, custom-columns, json or
// yaml output (obj, the item or a List, for all but custom-columns, which
// has a row per item); done is false for the other outputs.
func printStructured[T any](o GetOptions, s cmdutil.IOStreams, items []T, obj any) (done bool, err error) {
	switch tmplFormat, tmpl := printers.TemplateFormat(o.Output); tmplFormat {
	case printers.FormatJSONPath:
		return true, printers.JSONPath(s.Out, tmpl, obj)
	case printers.FormatCustomColumns:
		objs := make([]any, len(items))
		for i := range items {
			objs[i] = &items[i]
		}
		return true, printers.Columns(s.Out, tmpl, objs, o.NoHeaders)
	}
	if o.Output == "json" || o.Output == "yaml" {
		return true, printers.Object(s.Out, obj, o.Output)
	}
	return false, nil
}

// oneObject reports whether -o json/yaml/jsonpath print pods as one object,
// not a List: as kubectl's, when one name was given (names are of one
// namespace: not with -A).
func (o GetOptions) oneObject(pods []corev1.Pod) bool {
	return len(o.Names) == 1 && len(pods) == 1
}

// listOrPod is what -o json/yaml/jsonpath print: the pod (oneObject), else
// a List.
func (o GetOptions) listOrPod(pods []corev1.Pod) any {
	if o.oneObject(pods) {
		return &pods[0]
	}
	return &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: pods}
}

func filterPods(in []corev1.Pod, match func(*corev1.Pod) bool) []corev1.Pod {
	out := []corev1.Pod{}
	for i := range in {
		if match(&in[i]) {
			out = append(out, in[i])
		}
	}
	return out
}

// warnFiles prints, as kubectl prints warnings, the errors of the manifest
// files that concern the listed pods (api.FileError.Pods), one line each;
// a file that concerns no pod (it declares none that podhost could read)
// only with a whole listing (no names, no selector).
func warnFiles(ctx context.Context, c *api.Client, pods []corev1.Pod, whole bool, s cmdutil.IOStreams) {
	fes, err := c.FileErrors(ctx)
	if err != nil {
		return // the list answered: the daemon's own warning, if any, is printed
	}
	listed := make(map[string]bool, len(pods))
	for _, p := range pods {
		listed[p.Namespace+"/"+p.Name] = true
	}
	warn := c.Warn // each line once, escaped as the daemon's warnings
	if warn == nil {
		warn = cmdutil.WarnTo(s.ErrOut)
	}
	for _, fe := range fes {
		concerns := slices.ContainsFunc(fe.Pods, func(n string) bool { return listed[n] })
		if !concerns && (!whole || len(fe.Pods) > 0) {
			continue
		}
		for _, line := range strings.Split(fe.Error, "\n") {
			warn(line)
		}
	}
}
