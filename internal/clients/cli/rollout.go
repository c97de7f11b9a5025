package cli

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// RolloutOptions select a pod for `podhost rollout history|undo`.
type RolloutOptions struct {
	Socket    string
	Namespace string // default "default"
	Name      string // NAME or pod/NAME
}

// target validates the options and returns namespace and name.
func (o RolloutOptions) target() (string, string, error) {
	ns := o.Namespace
	if ns == "" {
		ns = "default"
	}
	name, err := podArg(o.Name)
	if err != nil {
		return "", "", err
	}
	return ns, name, cmdutil.ValidateNames(ns, name)
}

// RolloutHistory prints REVISION HASH AGE OUTCOME SOURCE (and the reason of a
// rolled-back revision) of a pod, oldest first, as kubectl rollout history;
// the running revision is marked with "*".
func RolloutHistory(ctx context.Context, o RolloutOptions, s cmdutil.IOStreams) error {
	ns, name, err := o.target()
	if err != nil {
		return err
	}
	h, err := cmdutil.NewClient(o.Socket, s).RolloutHistory(ctx, ns, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "pod/%s\n", name)
	printHistory(s, h, time.Now())
	return nil
}

func printHistory(s cmdutil.IOStreams, h []api.RolloutRevision, now time.Time) {
	tw := tabwriter.NewWriter(s.Out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tHASH\tAGE\tOUTCOME\tSOURCE\tREASON")
	for _, r := range h {
		rev := fmt.Sprint(r.Revision)
		if r.Running {
			rev += "*"
		}
		reason := r.Reason
		if reason == "" {
			reason = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", rev, r.Hash, duration.HumanDuration(now.Sub(r.Time)), r.Outcome, r.Source, reason)
	}
	_ = tw.Flush()
}

// RolloutUndo brings back the revision before the running one.
func RolloutUndo(ctx context.Context, o RolloutOptions, s cmdutil.IOStreams) error {
	ns, name, err := o.target()
	if err != nil {
		return err
	}
	n, err := cmdutil.NewClient(o.Socket, s).RolloutUndo(ctx, ns, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "pod/%s rolled back to revision %d (until its manifest changes)\n", name, n)
	return nil
}
