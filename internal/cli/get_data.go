package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DataResource returns "configmaps" or "secrets" for the names kubectl
// users type for them, "" otherwise.
func DataResource(r string) string {
	switch strings.ToLower(r) {
	case "configmaps", "configmap", "cm":
		return "configmaps"
	case "secrets", "secret":
		return "secrets"
	}
	return ""
}

// GetDataOptions select ConfigMaps or Secrets for get.
type GetDataOptions struct {
	Resource      string // "configmaps" or "secrets" (DataResource)
	ManifestDir   string
	AllowInsecure bool
	Namespace     string // "" = all
	Name          string
	Output        string // "", json, yaml, name
	NoHeaders     bool   // the table without its header line
}

// GetData prints the ConfigMaps or Secrets declared in the manifest dir
// (read from the files, as apply does: the daemon runs with the same
// objects, or their last good version while a file is invalid). Secret
// values are never printed: -o json/yaml show each key with a null value.
func GetData(o GetDataOptions, s IOStreams) error {
	switch o.Output {
	case "", "json", "yaml", "name":
	default:
		return fmt.Errorf("output format %q is not supported for %s by podhost (json, yaml, name)", o.Output, o.Resource)
	}
	if err := validateNames(o.Namespace, o.Name); err != nil {
		return err
	}
	snap, err := scanDir(o.ManifestDir, o.AllowInsecure, s.ErrOut)
	if err != nil {
		return err
	}
	var objs []any
	var rows [][]string
	kind := "configmap"
	if o.Resource == "secrets" {
		kind = "secret"
	}
	match := func(m metav1.ObjectMeta) bool {
		return (o.Namespace == "" || m.Namespace == o.Namespace) && (o.Name == "" || m.Name == o.Name)
	}
	for _, cm := range snap.ConfigMaps {
		if o.Resource == "configmaps" && match(cm.ObjectMeta) {
			objs = append(objs, cm)
			rows = append(rows, []string{cm.Namespace, cm.Name, fmt.Sprint(len(cm.Data) + len(cm.BinaryData))})
		}
	}
	for _, sec := range snap.Secrets {
		if o.Resource == "secrets" && match(sec.ObjectMeta) {
			objs = append(objs, redacted(sec))
			rows = append(rows, []string{sec.Namespace, sec.Name, string(sec.Type), fmt.Sprint(len(sec.Data))})
		}
	}
	if o.Name != "" && len(objs) == 0 {
		return &NotFoundError{Resource: o.Resource, Name: o.Name}
	}
	switch o.Output {
	case "json", "yaml":
		if o.Name != "" {
			return printObject(s, objs[0], o.Output)
		}
		return printObject(s, map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}, o.Output)
	case "name":
		for _, r := range rows {
			fmt.Fprintf(s.Out, "%s/%s\n", kind, r[1])
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(s.ErrOut, "No resources found")
		return nil
	}
	tw := tabwriter.NewWriter(s.Out, 0, 8, 3, ' ', 0)
	header := "NAMESPACE\tNAME\tDATA"
	if kind == "secret" {
		header = "NAMESPACE\tNAME\tTYPE\tDATA"
	}
	if !o.NoHeaders {
		fmt.Fprintln(tw, header)
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
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

// DescribeData prints one ConfigMap or Secret of the manifest dir as
// kubectl describe does: metadata, then each key (a ConfigMap's values; a
// Secret's sizes only — its values are never printed).
func DescribeData(o GetDataOptions, s IOStreams) error {
	if err := validateNames(o.Namespace, o.Name); err != nil {
		return err
	}
	snap, err := scanDir(o.ManifestDir, o.AllowInsecure, s.ErrOut)
	if err != nil {
		return err
	}
	for _, cm := range snap.ConfigMaps {
		if o.Resource == "configmaps" && cm.Namespace == o.Namespace && cm.Name == o.Name {
			describeMeta(s, cm.ObjectMeta)
			fmt.Fprintf(s.Out, "\nData\n====\n")
			for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
				fmt.Fprintf(s.Out, "%s:\n----\n%s\n\n", k, cm.Data[k])
			}
			fmt.Fprintf(s.Out, "\nBinaryData\n====\n")
			for _, k := range slices.Sorted(maps.Keys(cm.BinaryData)) {
				fmt.Fprintf(s.Out, "%s: %d bytes\n", k, len(cm.BinaryData[k]))
			}
			return nil
		}
	}
	for _, sec := range snap.Secrets {
		if o.Resource == "secrets" && sec.Namespace == o.Namespace && sec.Name == o.Name {
			describeMeta(s, sec.ObjectMeta)
			fmt.Fprintf(s.Out, "\nType:  %s\n\nData\n====\n", sec.Type)
			for _, k := range slices.Sorted(maps.Keys(sec.Data)) {
				fmt.Fprintf(s.Out, "%s:  %d bytes\n", k, len(sec.Data[k]))
			}
			return nil
		}
	}
	return &NotFoundError{Resource: o.Resource, Name: o.Name}
}

func describeMeta(s IOStreams, m metav1.ObjectMeta) {
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
