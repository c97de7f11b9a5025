package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/api"
	"github.com/podhost/podhost/internal/manifest"
	"github.com/podhost/podhost/internal/podview"
)

// GetOptions select pods for get and describe.
type GetOptions struct {
	Socket    string
	Namespace string // "" = all (get); describe defaults to "default"
	Name      string
	Output    string // "", wide, json, yaml, name, jsonpath=…, custom-columns=…
	Watch     bool   // -w: the table, then a line per change
	Selector  string // -l: a label selector, as kubectl's (get)

	// Printer flags, as kubectl get's: label columns (the table's and the
	// watch's), no header line (those and custom-columns).
	ShowLabels   bool     // --show-labels: a LABELS column, last
	LabelColumns []string // -L: a column per label key
	NoHeaders    bool     // --no-headers

	SortBy string // --sort-by: a JSONPath, as kubectl's
}

// matcher is the pods o selects: namespace, name and label selector.
func (o GetOptions) matcher() (func(*corev1.Pod) bool, error) {
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return nil, fmt.Errorf("unable to parse the label selector %q: %w", o.Selector, err)
	}
	return func(p *corev1.Pod) bool {
		return (o.Namespace == "" || p.Namespace == o.Namespace) && (o.Name == "" || p.Name == o.Name) && sel.Matches(labels.Set(p.Labels))
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

// Get prints pods as a table, JSON (a core/v1 PodList), YAML or names.
func Get(ctx context.Context, o GetOptions, s IOStreams) error {
	if err := o.validate(); err != nil {
		return err
	}
	match, err := o.matcher()
	if err != nil {
		return err
	}
	sorter, err := newPodSorter(o.SortBy)
	if err != nil {
		return err
	}
	c := newClient(o.Socket, s)
	list, err := c.ListPods(ctx)
	if err != nil {
		return err
	}
	pods := filterPods(list.Items, match)
	if o.Name != "" && len(pods) == 0 {
		return &NotFoundError{Resource: "pods", Name: o.Name}
	}
	if o.sorts(pods) {
		if err := sorter.sort(pods); err != nil {
			return err
		}
	}
	if o.Watch {
		if o.SortBy != "" { // kubectl's words; it, too, sorts only the first table
			fmt.Fprintln(s.ErrOut, "warning: --watch or --watch-only requested, --sort-by will be ignored")
		}
		return watchPods(ctx, c, o, match, pods, s)
	}
	return o.print(pods, s)
}

// validate checks the output format, the flags that go with it and the
// names, before the daemon is asked.
func (o GetOptions) validate() error {
	tmplFormat, _ := templateFormat(o.Output)
	switch o.Output {
	case "", "wide", "json", "yaml", "name":
	default:
		if tmplFormat == "" {
			return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: custom-columns,json,jsonpath,name,wide,yaml", o.Output)
		}
	}
	if o.Watch && !o.table() {
		return fmt.Errorf("--watch prints the table: -o %s is not supported with it by podhost", o.Output)
	}
	if o.ShowLabels && !o.table() {
		return fmt.Errorf("--show-labels option cannot be used with %s printer", o.Output)
	}
	return validateNames(o.Namespace, o.Name)
}

// print writes pods in o's output format.
func (o GetOptions) print(pods []corev1.Pod, s IOStreams) error {
	switch tmplFormat, tmpl := templateFormat(o.Output); tmplFormat {
	case formatJSONPath:
		return printJSONPath(s.Out, tmpl, listOrPod(pods, o.Name != ""))
	case formatCustomColumns:
		objs := make([]any, len(pods))
		for i := range pods {
			objs[i] = &pods[i]
		}
		return printColumns(s.Out, tmpl, objs, o.NoHeaders)
	}
	switch o.Output {
	case "json", "yaml":
		return printObject(s, listOrPod(pods, o.Name != ""), o.Output)
	case "name":
		podview.Names(s.Out, pods)
		return nil
	}
	if len(pods) == 0 {
		fmt.Fprintln(s.ErrOut, "No resources found")
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
// other outputs print (not to one named pod).
func (o GetOptions) sorts(pods []corev1.Pod) bool {
	switch {
	case o.Watch:
		return len(pods) > 1
	case o.table():
		return true
	}
	return o.Name == ""
}

// listOrPod is what -o json/yaml/jsonpath print: the pod when one was
// named, else a List.
func listOrPod(pods []corev1.Pod, one bool) any {
	if one {
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

func printObject(s IOStreams, v any, format string) error {
	if format == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = s.Out.Write(b)
		return err
	}
	enc := json.NewEncoder(s.Out)
	enc.SetIndent("", "    ")
	return enc.Encode(v)
}

// Describe prints one pod's details and events.
func Describe(ctx context.Context, o GetOptions, s IOStreams) error {
	if err := validateNames(o.Namespace, o.Name); err != nil {
		return err
	}
	c := newClient(o.Socket, s)
	p, err := c.GetPod(ctx, o.Namespace, o.Name)
	if errors.Is(err, api.ErrNotFound) {
		return &NotFoundError{Resource: "pods", Name: o.Name}
	}
	if err != nil {
		return err
	}
	evs, err := c.Events(ctx, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	view := make([]podview.Event, 0, len(evs))
	for _, e := range evs {
		view = append(view, podview.Event{Time: e.Time, Type: e.Type, Reason: e.Reason, Message: e.Message})
	}
	rs, err := c.Runtime(ctx)
	if err != nil {
		return err
	}
	return podview.Describe(s.Out, p, view, rs.LastConfirmed, time.Now())
}

// newClient returns an API client that prints the daemon's warnings (refused
// manifest files, a containerd outage) on stderr as kubectl does.
func newClient(socket string, s IOStreams) *api.Client {
	c := api.NewClient(socket)
	c.Warn = func(text string) { fmt.Fprintf(s.ErrOut, "Warning: %s\n", text) }
	return c
}

// validateNames checks a namespace and pod name given on the command line
// as the manifest decoder checks them ("" = not given).
func validateNames(namespace, name string) error {
	if namespace != "" {
		if err := manifest.ValidateNamespace(namespace); err != nil {
			return err
		}
	}
	if name != "" {
		return manifest.ValidatePodName(name)
	}
	return nil
}
