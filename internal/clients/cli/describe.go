package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/services/api"
)

// Describe prints each named pod's details, as kubectl describe: in the
// order named, two blank lines apart; a missing pod is a NotFoundError,
// returned after the others are printed. Without names, every pod of the
// namespace that the selector (-l) matches, by name. As kubectl's, each
// pod's events are shown, unless HideEvents (--show-events=false).
func Describe(ctx context.Context, o GetOptions, s cmdutil.IOStreams) error {
	if strings.TrimSpace(o.Selector) != "" && len(o.Names) > 0 {
		return errNameAndSelector
	}
	if err := cmdutil.ValidatePodNames(o.Namespace, o.Names); err != nil {
		return err
	}
	c := cmdutil.NewClient(o.Socket, s)
	pods, missing, err := describedPods(ctx, c, o)
	if err != nil || len(pods) == 0 {
		if err == nil && len(o.Names) == 0 {
			cmdutil.NoResources(s.ErrOut, o.Namespace)
		}
		return errors.Join(append([]error{err}, missing...)...)
	}
	rs, err := c.Runtime(ctx)
	if err != nil {
		return errors.Join(append([]error{err}, missing...)...)
	}
	showEvents := !o.HideEvents
	now := time.Now()
	var errs []error // as kubectl describe: a pod that cannot be described does not stop the others
	printed := 0
	for _, p := range pods {
		var b bytes.Buffer
		if err := describePod(ctx, c, p, showEvents, rs.LastConfirmed, now, &b); err != nil {
			errs = append(errs, err)
			continue
		}
		if printed > 0 {
			fmt.Fprint(s.Out, "\n\n")
		}
		printed++
		if _, err := b.WriteTo(s.Out); err != nil {
			return errors.Join(append(append(errs, err), missing...)...)
		}
	}
	return errors.Join(append(errs, missing...)...)
}

// describedPods is the pods o names (getPods), else those of its
// namespace its selector matches, by namespace and name.
func describedPods(ctx context.Context, c *api.Client, o GetOptions) ([]*corev1.Pod, []error, error) {
	if len(o.Names) > 0 {
		return getPods(ctx, c, o.Namespace, o.Names)
	}
	match, err := o.matcher()
	if err != nil {
		return nil, nil, err
	}
	list, err := c.ListPods(ctx)
	if err != nil {
		return nil, nil, err
	}
	var pods []*corev1.Pod
	for _, p := range filterPods(list.Items, match) {
		pods = append(pods, &p)
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return pods, nil, nil
}

// getPods asks the daemon for each named pod in turn: the ones it has, a
// NotFoundError per one it has not, or the first other error (with the
// NotFoundErrors until then).
func getPods(ctx context.Context, c *api.Client, namespace string, names []string) ([]*corev1.Pod, []error, error) {
	var pods []*corev1.Pod
	var missing []error
	for _, name := range names {
		p, err := c.GetPod(ctx, namespace, name)
		switch {
		case errors.Is(err, api.ErrNotFound):
			missing = append(missing, &cmdutil.NotFoundError{Resource: "pods", Name: name})
		case err != nil:
			return nil, missing, err
		default:
			pods = append(pods, p)
		}
	}
	return pods, missing, nil
}

// describePod writes p's description, its events too with showEvents.
func describePod(ctx context.Context, c *api.Client, p *corev1.Pod, showEvents bool, confirmed, now time.Time, w io.Writer) error {
	var view []podview.Event // nil: no Events section
	if showEvents {
		evs, err := c.Events(ctx, p.Namespace, p.Name)
		if err != nil {
			return err
		}
		view = make([]podview.Event, 0, len(evs))
		for _, e := range evs {
			view = append(view, podview.Event{Time: e.Time, First: e.First, Count: e.Count, Type: e.Type, Reason: e.Reason, Message: e.Message})
		}
	}
	return podview.Describe(w, p, view, confirmed, now)
}
