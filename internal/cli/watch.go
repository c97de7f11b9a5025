package cli

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/api"
	"github.com/podhost/podhost/internal/podview"
)

// podWatcher prints the `get pods -w` lines: the table first, then one
// line each time a pod's row changes (AGE aside, which changes by itself).
type podWatcher struct {
	out   *lineWriter
	wide  bool
	match func(*corev1.Pod) bool
	now   func() time.Time
	shown map[types.UID]string // the row last printed, without AGE
}

func newPodWatcher(lw *lineWriter, o GetOptions, match func(*corev1.Pod) bool, now func() time.Time) *podWatcher {
	return &podWatcher{out: lw, wide: o.Output == "wide", match: match, now: now, shown: map[types.UID]string{}}
}

// initial prints the table of the pods listed before the watch.
func (w *podWatcher) initial(pods []corev1.Pod) {
	rows := [][]string{podview.Header(w.wide)}
	for i := range pods {
		rows = append(rows, podview.Row(&pods[i], w.wide, w.now()))
	}
	w.out.fit(rows...)
	for i, r := range rows {
		w.out.print(r)
		if i > 0 {
			w.shown[pods[i-1].UID] = rowKey(r)
		}
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
			w.out.print(podview.Row(p, w.wide, w.now()))
		}
		return
	}
	row := podview.Row(p, w.wide, w.now())
	key := rowKey(row)
	if e.Type == api.WatchDeleted {
		delete(w.shown, p.UID)
		w.out.print(row)
		return
	}
	if w.shown[p.UID] == key {
		return
	}
	w.shown[p.UID] = key
	w.out.print(row)
}

// rowKey is the row without its AGE cell.
func rowKey(row []string) string {
	cells := append(append([]string{}, row[:4]...), row[5:]...)
	return strings.Join(cells, "\x00")
}

// watchPods prints the table, then the changes until ctx is done.
func watchPods(ctx context.Context, c *api.Client, o GetOptions, match func(*corev1.Pod) bool, pods []corev1.Pod, s IOStreams) error {
	w := newPodWatcher(&lineWriter{w: s.Out}, o, match, time.Now)
	w.initial(pods)
	return c.WatchPods(ctx, func(e api.WatchEvent) error {
		w.event(e)
		return nil
	})
}
