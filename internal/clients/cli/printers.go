package cli

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
	formatJSONPath      = "jsonpath"
	formatCustomColumns = "custom-columns"
)

// templateFormat splits "jsonpath={.x}" into ("jsonpath", "{.x}"); other
// formats return ("", "").
func templateFormat(output string) (string, string) {
	for _, f := range []string{formatJSONPath, formatCustomColumns} {
		if t, ok := strings.CutPrefix(output, f+"="); ok {
			return f, t
		}
	}
	return "", ""
}

// toGeneric turns an API object into the map/slice form jsonpath walks (as
// kubectl prints unstructured objects: JSON field names, not Go ones).
func toGeneric(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// printJSONPath executes the template on v (a Pod, or a List of them).
func printJSONPath(w io.Writer, tmpl string, v any) error {
	jp := jsonpath.New("out").AllowMissingKeys(true)
	if err := jp.Parse(tmpl); err != nil {
		return fmt.Errorf("error parsing jsonpath %s, %w", tmpl, err)
	}
	obj, err := toGeneric(v)
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
		rel, err := relaxedJSONPath(expr)
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

// relaxedJSONPath accepts ".a.b", "a.b" and "{.a.b}" as kubectl does.
func relaxedJSONPath(expr string) (string, error) {
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

// printColumns prints one row per object under the columns' headers (none
// with noHeaders); absent values print as <none>, several values joined by
// ",".
func printColumns(w io.Writer, spec string, objs []any, noHeaders bool) error {
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
		obj, err := toGeneric(o)
		if err != nil {
			return err
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			if row[i], err = columnValue(c.path, obj); err != nil {
				return err
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
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
