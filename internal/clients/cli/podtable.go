package cli

import (
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/model/podview"
)

// podColumns are the columns of the `get pods` table: NAMESPACE first with
// -A (as kubectl's printer adds it), podview's (NAME READY STATUS RESTARTS
// AGE, then IP NODE SOURCE with wide), then, as kubectl's table printer
// adds them, one per -L label key and LABELS (--show-labels).
type podColumns struct {
	namespace    bool // -A: a NAMESPACE column first
	wide         bool
	labelColumns []string // -L: one column per label key
	showLabels   bool     // --show-labels: every label, last
}

func (o GetOptions) columns() podColumns {
	return podColumns{namespace: o.Namespace == "", wide: o.Output == "wide", labelColumns: o.LabelColumns, showLabels: o.ShowLabels}
}

// header is the table's column names, one per cell of row.
func (c podColumns) header() []string {
	var h []string
	if c.namespace {
		h = append(h, "NAMESPACE")
	}
	h = append(h, podview.Header(c.wide)...)
	return append(h, printers.LabelHeaders(c.labelColumns, c.showLabels)...)
}

// row is p's cells (its namespace first with -A), then its label cells.
func (c podColumns) row(p *corev1.Pod, now time.Time) []string {
	var r []string
	if c.namespace {
		r = append(r, p.Namespace)
	}
	r = append(r, podview.Row(p, c.wide, now)...)
	return append(r, printers.LabelCells(p.Labels, c.labelColumns, c.showLabels)...)
}

// ageColumn is the index of the AGE cell in a row.
func (c podColumns) ageColumn() int {
	if c.namespace {
		return 5
	}
	return 4
}

// print writes the table, without its header line with noHeaders.
func (c podColumns) print(w io.Writer, pods []corev1.Pod, noHeaders bool, now time.Time) error {
	rows := make([][]string, len(pods))
	for i := range pods {
		rows[i] = c.row(&pods[i], now)
	}
	return printers.Table(w, c.header(), rows, noHeaders)
}
