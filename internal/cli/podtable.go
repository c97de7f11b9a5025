package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podhost/podhost/internal/podview"
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
	h := podview.Header(c.wide)
	for _, key := range c.labelColumns {
		h = append(h, labelHeader(key))
	}
	if c.showLabels {
		h = append(h, "LABELS")
	}
	return h
}

// row is p's cells: the value of each -L label ("" when p lacks it), then
// its labels as kubectl prints them (key=value sorted by key, joined by
// ",", <none> when there are none).
func (c podColumns) row(p *corev1.Pod, now time.Time) []string {
	r := podview.Row(p, c.wide, now)
	for _, key := range c.labelColumns {
		r = append(r, p.Labels[key])
	}
	if c.showLabels {
		r = append(r, labels.FormatLabels(p.Labels))
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
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if !noHeaders {
		fmt.Fprintln(tw, strings.Join(c.header(), "\t"))
	}
	for i := range pods {
		fmt.Fprintln(tw, strings.Join(c.row(&pods[i], now), "\t"))
	}
	return tw.Flush()
}
