// Package printers prints API objects as kubectl's printers do: tables
// (tabwriter, and line by line for watches), json and yaml, jsonpath and
// custom-columns templates (client-go's jsonpath), label columns, and
// --sort-by's order. It knows nothing of the daemon or of flags.
package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"k8s.io/client-go/util/jsonpath"
)

// Output formats that take a template: -o jsonpath=… and
// -o custom-columns=…, printed with client-go's jsonpath (kubectl's).
const (
	FormatJSONPath      = "jsonpath"
	FormatCustomColumns = "custom-columns"
)

// TemplateFormat splits "jsonpath={.x}" into ("jsonpath", "{.x}"); other
// formats return ("", "").
func TemplateFormat(output string) (string, string) {
	for _, f := range []string{FormatJSONPath, FormatCustomColumns} {
		if t, ok := strings.CutPrefix(output, f+"="); ok {
			return f, t
		}
	}
	return "", ""
}

// ToGeneric turns an API object into the map/slice form jsonpath walks (as
// kubectl prints unstructured objects: JSON field names, not Go ones).
func ToGeneric(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// JSONPath executes the template on v (an object, or a List of them).
func JSONPath(w io.Writer, tmpl string, v any) error {
	jp := jsonpath.New("out").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return fmt.Errorf("error parsing jsonpath %s, %w", tmpl, err)
	}
	obj, err := ToGeneric(v)
	if err != nil {
		return err
	}
	if err := jp.Execute(w, obj); err != nil {
		return fmt.Errorf("error executing jsonpath %q: %w", tmpl, err)
	}
	return nil
}

type column struct {
	header string
	path   *jsonpath.JSONPath
}

// parseColumns parses "NAME:.metadata.name,IP:{.status.podIP}".
func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, fmt.Errorf("custom-columns format specified but no custom columns given")
	}
	var cols []column
	for _, part := range strings.Split(spec, ",") {
		header, expr, ok := strings.Cut(part, ":")
		if !ok || header == "" {
			return nil, fmt.Errorf("unexpected custom-columns spec: %s, expected <header>:<json-path-expr>", part)
		}
		rel, err := RelaxedJSONPath(expr)
		if err != nil {
			return nil, err
		}
		jp := jsonpath.New(header).AllowMissingKeys(true)
		if err := jp.Parse(rel); err != nil {
			return nil, fmt.Errorf("error parsing jsonpath %s, %w", expr, err)
		}
		cols = append(cols, column{header: header, path: jp})
	}
	return cols, nil
}

var jsonRegexp = regexp.MustCompile(`^\{\.?([^{}]+)\}$|^\.?([^{}]+)$`)

// RelaxedJSONPath accepts ".a.b", "a.b" and "{.a.b}" as kubectl does.
func RelaxedJSONPath(expr string) (string, error) {
	m := jsonRegexp.FindStringSubmatch(expr)
	if m == nil {
		return "", fmt.Errorf("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'")
	}
	field := m[1]
	if field == "" {
		field = m[2]
	}
	return "{." + field + "}", nil
}

// Columns prints one row per object under the columns' headers (none
// with noHeaders); absent values print as <none>, several values joined by
// ",".
func Columns(w io.Writer, spec string, objs []any, noHeaders bool) error {
	cols, err := parseColumns(spec)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 5, 8, 3, ' ', 0)
	headers := make([]string, len(cols))
	for i, c := range cols {
		headers[i] = c.header
	}
	if !noHeaders {
		fmt.Fprintln(tw, strings.Join(headers, "\t"))
	}
	for _, o := range objs {
		obj, err := ToGeneric(o)
		if err != nil {
			return err
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			if row[i], err = columnValue(c.path, obj); err != nil {
				return err
			}
		}
		fmt.Fprintln(tw, strings.Join(EscapeCells(row), "\t"))
	}
	return tw.Flush()
}

func columnValue(jp *jsonpath.JSONPath, obj any) (string, error) {
	results, err := jp.FindResults(obj)
	if err != nil {
		return "", err
	}
	var vals []string
	for _, r := range results {
		for _, v := range r {
			vals = append(vals, fmt.Sprintf("%v", v.Interface()))
		}
	}
	if len(vals) == 0 {
		return "<none>", nil
	}
	return strings.Join(vals, ","), nil
}
