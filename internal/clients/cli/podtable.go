package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podhost/podhost/internal/model/podview"
)

// podColumns are the columns of the `get pods` table: podview's (NAME READY
// STATUS RESTARTS AGE, then IP NODE SOURCE with wide), then, as kubectl's
// table printer adds them, one per -L label key and LABELS (--show-labels).
type podColumns struct {
	wide         bool
	labelColumns []string // -L: one column per label key
	showLabels   bool     // --show-labels: every label, last
}

func (o GetOptions) columns() podColumns {
	return podColumns{wide: o.Output == "wide", labelColumns: o.LabelColumns, showLabels: o.ShowLabels}
}

// header is the table's column names, one per cell of row.
func (c podColumns) header() []string {
	return append(podview.Header(c.wide), labelHeaders(c.labelColumns, c.showLabels)...)
}

// row is p's cells, then its label cells (labelCells).
func (c podColumns) row(p *corev1.Pod, now time.Time) []string {
	return append(podview.Row(p, c.wide, now), labelCells(p.Labels, c.labelColumns, c.showLabels)...)
}

// labelHeaders are the headers of the label columns kubectl's table
// printer adds after the others: one per -L key, then LABELS with
// --show-labels.
func labelHeaders(keys []string, showLabels bool) []string {
	var h []string
	for _, key := range keys {
		h = append(h, labelHeader(key))
	}
	if showLabels {
		h = append(h, "LABELS")
	}
	return h
}

// labelCells are an object's cells of the label columns: the value of
// each -L label ("" when it lacks it), then its labels as kubectl prints
// them (key=value sorted by key, joined by ",", <none> when there are
// none).
func labelCells(l map[string]string, keys []string, showLabels bool) []string {
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

// print writes the table, without its header line with noHeaders.
func (c podColumns) print(w io.Writer, pods []corev1.Pod, noHeaders bool, now time.Time) error {
	rows := make([][]string, len(pods))
	for i := range pods {
		rows[i] = c.row(&pods[i], now)
	}
	return writeTable(w, c.header(), rows, noHeaders)
}

// writeTable writes rows under header as kubectl's table printer, columns
// 3 spaces apart; no header line with noHeaders.
func writeTable(w io.Writer, header []string, rows [][]string, noHeaders bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if !noHeaders {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}
