package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/podhost/podhost/internal/model/podview"
)

// Table writes rows under header as kubectl's table printer, columns 3
// spaces apart; no header line with noHeaders.
func Table(w io.Writer, header []string, rows [][]string, noHeaders bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if !noHeaders {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(EscapeCells(r), "\t"))
	}
	return tw.Flush()
}

// EscapeCells escapes each cell of a table row for the terminal: one line,
// no control characters (podview.EscapeCell). Cells hold container text
// (event messages, probe output).
func EscapeCells(row []string) []string {
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = podview.EscapeCell(c)
	}
	return out
}

// LabelHeaders are the headers of the label columns kubectl's table
// printer adds after the others: one per -L key, then LABELS with
// --show-labels.
func LabelHeaders(keys []string, showLabels bool) []string {
	var h []string
	for _, key := range keys {
		h = append(h, labelHeader(key))
	}
	if showLabels {
		h = append(h, "LABELS")
	}
	return h
}

// LabelCells are an object's cells of the label columns: the value of
// each -L label ("" when it lacks it), then its labels as kubectl prints
// them (key=value sorted by key, joined by ",", <none> when there are
// none).
func LabelCells(l map[string]string, keys []string, showLabels bool) []string {
	var r []string
	for _, key := range keys {
		r = append(r, l[key])
	}
	if showLabels {
		r = append(r, labels.FormatLabels(l))
	}
	return r
}

// labelHeader is kubectl's header of a -L column: the key's last
// "/"-separated segment, upper-cased (app.kubernetes.io/name: NAME).
func labelHeader(key string) string {
	return strings.ToUpper(key[strings.LastIndex(key, "/")+1:])
}

// Object prints v as "yaml", else as JSON indented as kubectl's (4 spaces).
func Object(w io.Writer, v any, format string) error {
	if format == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	return enc.Encode(v)
}
