package manifestcmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/desired/source"
	"github.com/podhost/podhost/internal/model/podview"
)

// GetDataOptions select ConfigMaps or Secrets for get.
type GetDataOptions struct {
	Resource      string // "configmaps" or "secrets" (DataResource)
	ManifestDir   string
	AllowInsecure bool
	Namespace     string   // "" = every namespace (-A: a NAMESPACE column first)
	Names         []string // none: every object; else these, in order (missing ones are NotFoundErrors)
	Output        string   // "", json, yaml, name
	NoHeaders     bool     // the table without its header line
}

// dataObject is a ConfigMap or Secret of the manifest dir and its row of
// get's table.
type dataObject struct {
	meta metav1.ObjectMeta
	obj  any // *corev1.ConfigMap or *corev1.Secret, as read (printable: as printed)
	row  []string
}

// printable is the object as get -o json|yaml prints it: a Secret without
// its values.
func (d dataObject) printable() any {
	if sec, ok := d.obj.(*corev1.Secret); ok {
		return redacted(sec)
	}
	return d.obj
}

// GetData prints the ConfigMaps or Secrets declared in the manifest dir
// (read from the files, as apply does: the daemon runs with the same
// objects, or their last good version while a file is invalid). Secret
// values are never printed: -o json/yaml show each key with a null value.
// Missing names are NotFoundErrors, as in Get.
func GetData(o GetDataOptions, s cmdutil.IOStreams) error {
	switch o.Output {
	case "", "json", "yaml", "name":
	default:
		return fmt.Errorf("output format %q is not supported for %s by podhost (json, yaml, name)", o.Output, o.Resource)
	}
	objs, missing, err := o.named(s)
	if err != nil {
		return err
	}
	if len(missing) > 0 && len(o.Names) == 1 {
		return missing[0]
	}
	return errors.Join(append([]error{o.print(objs, len(missing) > 0, s)}, missing...)...)
}

// objects is the ConfigMaps or Secrets of snap in o's namespace.
func (o GetDataOptions) objects(snap source.Snapshot) []dataObject {
	var out []dataObject
	inNamespace := func(m metav1.ObjectMeta) bool { return o.Namespace == "" || m.Namespace == o.Namespace }
	for _, cm := range snap.ConfigMaps {
		if o.Resource == "configmaps" && inNamespace(cm.ObjectMeta) {
			out = append(out, dataObject{cm.ObjectMeta, cm, []string{cm.Namespace, cm.Name, fmt.Sprint(len(cm.Data) + len(cm.BinaryData))}})
		}
	}
	for _, sec := range snap.Secrets {
		if o.Resource == "secrets" && inNamespace(sec.ObjectMeta) {
			out = append(out, dataObject{sec.ObjectMeta, sec, []string{sec.Namespace, sec.Name, string(sec.Type), fmt.Sprint(len(sec.Data))}})
		}
	}
	return out
}

// print writes objs in o's output format: one object for one name, else a
// List, as kubectl; "No resources found" for none, unless names were
// missing.
func (o GetDataOptions) print(objs []dataObject, missing bool, s cmdutil.IOStreams) error {
	kind := strings.TrimSuffix(o.Resource, "s")
	switch o.Output {
	case "json", "yaml":
		if len(o.Names) == 1 && len(objs) == 1 {
			return printers.Object(s.Out, objs[0].printable(), o.Output)
		}
		items := make([]any, 0, len(objs))
		for _, d := range objs {
			items = append(items, d.printable())
		}
		return printers.Object(s.Out, map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, o.Output)
	case "name":
		for _, d := range objs {
			fmt.Fprintf(s.Out, "%s/%s\n", kind, d.meta.Name)
		}
		return nil
	}
	if len(objs) == 0 {
		if !missing {
			cmdutil.NoResources(s.ErrOut, o.Namespace)
		}
		return nil
	}
	tw := tabwriter.NewWriter(s.Out, 0, 8, 3, ' ', 0)
	header := "NAMESPACE\tNAME\tDATA"
	if kind == "secret" {
		header = "NAMESPACE\tNAME\tTYPE\tDATA"
	}
	skip := 0 // as kubectl: NAMESPACE only for every namespace (-A)
	if o.Namespace != "" {
		header, skip = strings.TrimPrefix(header, "NAMESPACE\t"), 1
	}
	if !o.NoHeaders {
		fmt.Fprintln(tw, header)
	}
	for _, d := range objs {
		fmt.Fprintln(tw, strings.Join(d.row[skip:], "\t"))
	}
	return tw.Flush()
}

// redacted is a copy of sec with every value removed (keys kept).
func redacted(sec *corev1.Secret) *corev1.Secret {
	out := sec.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	// kubectl's copy of the applied object would hold the values.
	delete(out.Annotations, corev1.LastAppliedConfigAnnotation)
	out.Data = make(map[string][]byte, len(sec.Data))
	for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
		out.Data[k] = nil
	}
	return out
}

// named is o's objects of the manifest dir in the order named, and a
// NotFoundError per name missing.
func (o GetDataOptions) named(s cmdutil.IOStreams) ([]dataObject, []error, error) {
	if err := cmdutil.ValidatePodNames(o.Namespace, o.Names); err != nil {
		return nil, nil, err
	}
	snap, err := scanDir(o.ManifestDir, o.AllowInsecure, s.ErrOut)
	if err != nil {
		return nil, nil, err
	}
	objs, missing := cmdutil.ByName(o.objects(snap), o.Names, func(d *dataObject) string { return d.meta.Name }, o.Resource)
	return objs, missing, nil
}

// DescribeData prints each named ConfigMap or Secret of the manifest dir
// as kubectl describe does: metadata, then each key (a ConfigMap's values;
// a Secret's sizes only — its values are never printed); in the order
// named, two blank lines apart, missing ones as NotFoundErrors after them.
func DescribeData(o GetDataOptions, s cmdutil.IOStreams) error {
	objs, missing, err := o.named(s)
	if err != nil {
		return err
	}
	s.Out = podview.NewTerminalWriter(s.Out) // values may hold anything
	for i, d := range objs {
		if i > 0 {
			fmt.Fprint(s.Out, "\n\n")
		}
		describeDataObject(s, d.obj)
	}
	return errors.Join(missing...)
}

// describeDataObject writes one ConfigMap's or Secret's description.
func describeDataObject(s cmdutil.IOStreams, obj any) {
	switch obj := obj.(type) {
	case *corev1.ConfigMap:
		describeMeta(s, obj.ObjectMeta)
		fmt.Fprintf(s.Out, "\nData\n====\n")
		for _, k := range slices.Sorted(maps.Keys(obj.Data)) {
			fmt.Fprintf(s.Out, "%s:\n----\n%s\n\n", k, obj.Data[k])
		}
		fmt.Fprintf(s.Out, "\nBinaryData\n====\n")
		for _, k := range slices.Sorted(maps.Keys(obj.BinaryData)) {
			fmt.Fprintf(s.Out, "%s: %d bytes\n", k, len(obj.BinaryData[k]))
		}
	case *corev1.Secret:
		describeMeta(s, obj.ObjectMeta)
		fmt.Fprintf(s.Out, "\nType:  %s\n\nData\n====\n", obj.Type)
		for _, k := range slices.Sorted(maps.Keys(obj.Data)) {
			fmt.Fprintf(s.Out, "%s:  %d bytes\n", k, len(obj.Data[k]))
		}
	}
}

func describeMeta(s cmdutil.IOStreams, m metav1.ObjectMeta) {
	fmt.Fprintf(s.Out, "Name:         %s\nNamespace:    %s\n", m.Name, m.Namespace)
	fmt.Fprintf(s.Out, "Labels:       %s\nAnnotations:  %s\n", keyValues(m.Labels), keyValues(withoutLastApplied(m.Annotations)))
}

func keyValues(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, "\n              ")
}

// withoutLastApplied drops kubectl's copy of the applied object (it holds a
// Secret's values).
func withoutLastApplied(m map[string]string) map[string]string {
	out := maps.Clone(m)
	delete(out, corev1.LastAppliedConfigAnnotation)
	return out
}

// scanDir reads the manifest dir; a missing dir is an empty one. Problems in
// single files are printed as warnings: they are not the command's errors.
func scanDir(dir string, allowInsecure bool, errOut io.Writer) (source.Snapshot, error) {
	snap, err := source.Scan(dir, allowInsecure)
	if errors.Is(err, fs.ErrNotExist) {
		return source.Snapshot{}, nil
	}
	if err != nil {
		return snap, err
	}
	warn := cmdutil.WarnTo(errOut)
	for _, fe := range snap.Errors {
		for _, line := range strings.Split(fe.Error(), "\n") {
			warn(line)
		}
	}
	return snap, nil
}
