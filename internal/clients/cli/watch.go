package cli

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/services/api"
)

// podWatcher prints the `get pods -w` lines: the table first, then one
// line each time a pod's row changes (AGE aside, which changes by itself).
type podWatcher struct {
	out       *printers.LineWriter
	cols      podColumns
	noHeaders bool
	match     func(*corev1.Pod) bool
	now       func() time.Time
	shown     map[types.UID]string // the row last printed, without AGE
}

func newPodWatcher(lw *printers.LineWriter, o GetOptions, match func(*corev1.Pod) bool, now func() time.Time) *podWatcher {
	return &podWatcher{out: lw, cols: o.columns(), noHeaders: o.NoHeaders, match: match, now: now, shown: map[types.UID]string{}}
}

// initial prints the table of the pods listed before the watch (its
// header too, unless --no-headers).
func (w *podWatcher) initial(pods []corev1.Pod) {
	var rows [][]string
	if !w.noHeaders {
		rows = append(rows, w.cols.header())
	}
	for i := range pods {
		r := w.cols.row(&pods[i], w.now())
		w.shown[pods[i].UID] = w.rowKey(r)
		rows = append(rows, r)
	}
	w.out.Fit(rows...)
	for _, r := range rows {
		w.out.Print(r)
	}
}

// event prints e's row if it differs from the pod's last printed one. A
// deleted pod prints its last row once more (as kubectl does).
func (w *podWatcher) event(e api.WatchEvent) {
	p := &e.Object
	if !w.match(p) {
		if _, shown := w.shown[p.UID]; shown && e.Type != api.WatchDeleted {
			// No longer selected (a label changed): its last row once more,
			// as a deleted one, then nothing.
			delete(w.shown, p.UID)
			w.out.Print(w.cols.row(p, w.now()))
		}
		return
	}
	row := w.cols.row(p, w.now())
	key := w.rowKey(row)
	if e.Type == api.WatchDeleted {
		delete(w.shown, p.UID)
		w.out.Print(row)
		return
	}
	if w.shown[p.UID] == key {
		return
	}
	w.shown[p.UID] = key
	w.out.Print(row)
}

// rowKey is the row without its AGE cell.
func (w *podWatcher) rowKey(row []string) string {
	age := w.cols.ageColumn()
	cells := append(append([]string{}, row[:age]...), row[age+1:]...)
	return strings.Join(cells, "\x00")
}

// watchPods prints the table, then the changes until ctx is done.
func watchPods(ctx context.Context, c *api.Client, o GetOptions, match func(*corev1.Pod) bool, pods []corev1.Pod, s cmdutil.IOStreams) error {
	w := newPodWatcher(printers.NewLineWriter(s.Out), o, match, time.Now)
	w.initial(pods)
	return c.WatchPods(ctx, func(e api.WatchEvent) error {
		w.event(e)
		return nil
	})
}
