package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/clients/printers"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/services/api"
)

// EventsOptions select events (kubectl events).
type EventsOptions struct {
	Socket        string
	Namespace     string // default "default"
	AllNamespaces bool
	For           string // "pod/NAME" (or "pods/NAME", "po/NAME"); "" = every pod
	Watch         bool
}

// Events prints LAST SEEN TYPE REASON OBJECT MESSAGE (NAMESPACE first with
// -A), oldest first; with Watch it then prints each new event.
func Events(ctx context.Context, o EventsOptions, s cmdutil.IOStreams) error {
	pod, err := parseFor(o.For)
	if err != nil {
		return err
	}
	ns := o.Namespace
	if o.AllNamespaces {
		ns = ""
	}
	if err := cmdutil.ValidateNames(ns, pod); err != nil {
		return err
	}
	c := cmdutil.NewClient(o.Socket, s)
	evs, err := c.AllEvents(ctx, ns, pod)
	if err != nil {
		return err
	}
	t := eventTable{lw: printers.NewLineWriter(s.Out), allNS: o.AllNamespaces, now: time.Now()}
	if len(evs) == 0 && !o.Watch {
		fmt.Fprintf(s.ErrOut, "No events found in %s namespace.\n", ns)
		return nil
	}
	t.print(evs)
	if !o.Watch {
		return nil
	}
	seen := len(evs)
	return c.WatchEvents(ctx, ns, pod, func(e api.ObjectEvent) error {
		if seen > 0 { // the stream starts with the events already printed
			seen--
			return nil
		}
		t.now = time.Now()
		t.lw.Print(t.row(e))
		return nil
	})
}

// parseFor accepts kubectl's --for TYPE/NAME for pods.
func parseFor(f string) (string, error) {
	if f == "" {
		return "", nil
	}
	kind, name, ok := strings.Cut(f, "/")
	if !ok || name == "" {
		return "", fmt.Errorf("--for: want pod/NAME, got %q", f)
	}
	if err := CheckResource(strings.ToLower(kind)); err != nil {
		return "", err
	}
	return name, nil
}

type eventTable struct {
	lw    *printers.LineWriter
	allNS bool
	now   time.Time
}

func (t eventTable) header() []string {
	h := []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
	if t.allNS {
		h = append([]string{"NAMESPACE"}, h...)
	}
	return h
}

func (t eventTable) row(e api.ObjectEvent) []string {
	// LAST SEEN, with kubectl's "(x95 over 1h)" for a repeated event
	lastSeen := podview.EventAge(podview.Event{Time: e.Time, First: e.First, Count: e.Count}, t.now)
	r := []string{lastSeen, e.Type, e.Reason, "pod/" + e.Pod, e.Message}
	if t.allNS {
		r = append([]string{e.Namespace}, r...)
	}
	return r
}

func (t eventTable) print(evs []api.ObjectEvent) {
	rows := [][]string{t.header()}
	for _, e := range evs {
		rows = append(rows, t.row(e))
	}
	t.lw.Fit(rows...)
	for _, r := range rows {
		t.lw.Print(r)
	}
}
