package wait

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/services/api"
)

// ForOptions select the pods `podhost wait` waits for, and the
// condition, as kubectl wait's.
type ForOptions struct {
	Socket        string
	Namespace     string // the pods' namespace (kubectl's default: "default")
	AllNamespaces bool   // -A, with -l or --all
	Names         []string
	Selector      string // -l
	All           bool   // --all: every pod of the namespace
	For           string // delete | create | condition=NAME[=VALUE] | jsonpath=EXPR[=VALUE]
	// Timeout: 0 checks once, negative waits a week (kubectl's).
	Timeout time.Duration
	// StopIfDown ends the wait, with ErrDaemonDown, when the daemon goes
	// away (delete: the daemon ends the termination when it starts).
	StopIfDown bool
}

// waitRetry is how soon a watch that failed (the daemon restarting, not
// up yet) is opened again.
const waitRetry = 250 * time.Millisecond

// errWaitDone ends the watch: every pod met the condition.
var errWaitDone = errors.New("condition met")

// errNoMatching is kubectl's answer to a selector that matches nothing.
var errNoMatching = errors.New("no matching resources found")

// For waits, as kubectl wait, until the condition holds for every pod
// named or selected, printing `pod/NAME condition met` for each in turn;
// pods are selected once, when the daemon's watch is in sync. Until the
// timeout a daemon that is not up yet, or restarts, is watched again.
func For(ctx context.Context, o ForOptions, s cmdutil.IOStreams) error {
	cond, err := parseWaitFor(o.For)
	if err != nil {
		return err
	}
	sel, err := labels.Parse(o.Selector)
	if err != nil {
		return fmt.Errorf("unable to parse the label selector %q: %w", o.Selector, err)
	}
	if err := o.check(); err != nil {
		return err
	}
	once := o.Timeout == 0
	switch {
	case once:
		// Still long enough to read the pods once.
		o.Timeout = 30 * time.Second
	case o.Timeout < 0:
		o.Timeout = 7 * 24 * time.Hour
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	w := &podWait{cond: cond, o: o, sel: sel, out: s.Out, once: once}
	return w.run(ctx, api.NewClient(o.Socket))
}

// check refuses what kubectl refuses in the arguments.
func (o ForOptions) check() error {
	switch {
	case len(o.Names) == 0 && o.Selector == "" && !o.All:
		return errors.New("resource(s) were provided, but no name was specified: give pod names, -l SELECTOR or --all")
	case len(o.Names) > 0 && (o.Selector != "" || o.All):
		return errors.New("name cannot be provided when a selector is specified")
	case len(o.Names) > 0 && o.AllNamespaces:
		return errors.New("a resource cannot be retrieved by name across all namespaces")
	}
	return cmdutil.ValidatePodNames(o.Namespace, o.Names)
}

// waitCondition is one --for.
type waitCondition struct {
	kind  string                          // "delete", "create" or "" (check)
	check func(*corev1.Pod) (bool, error) // for ""
}

// podWait follows the watch and tells when every pod met the condition.
type podWait struct {
	cond waitCondition
	o    ForOptions
	sel  labels.Selector
	out  io.Writer
	once bool // --timeout=0: decide on the pods as they are

	pods    map[string]*corev1.Pod // namespace/name → the pod now
	targets []waitTarget           // chosen at the first sync
	synced  bool
	met     int // targets[:met] met the condition (and were printed)
}

type waitTarget struct {
	namespace, name string
	uid             types.UID // the pod when chosen (delete waits for it to go)
	// deleting: seen with a deletionTimestamp. Seen again without one, the
	// pod was applied again (same manifest, same UID): its delete is over.
	deleting bool
}

func (t waitTarget) key() string { return t.namespace + "/" + t.name }

func (w *podWait) run(ctx context.Context, c *api.Client) error {
	var last error
	for {
		w.pods, w.synced = map[string]*corev1.Pod{}, false
		err := c.WatchPodsSynced(ctx, w.event)
		switch {
		case errors.Is(err, errWaitDone):
			return nil
		case err != nil && (errors.Is(err, errNoMatching) || errors.As(err, new(*cmdutil.NotFoundError)) || errors.As(err, new(*waitError))):
			return err
		case err != nil && ctx.Err() != nil:
			// timed out or interrupted: said below
		case err != nil && (w.once || !daemonAway(err) || w.o.StopIfDown && errors.Is(err, api.ErrDaemonDown)):
			return err // --timeout=0 reads the pods once; delete does not wait for a daemon
		case err != nil:
			last = err
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err() // interrupted
			}
			return w.timedOut(last)
		case <-time.After(waitRetry):
		}
	}
}

// waitError is a condition that cannot be decided (a bad JSONPath result)
// or was not met with --timeout=0: the wait ends.
type waitError struct{ err error }

func (e *waitError) Error() string { return e.err.Error() }

func (w *podWait) timedOut(last error) error {
	target := "the pods"
	if w.met < len(w.targets) {
		target = "pods/" + w.targets[w.met].name
	} else if len(w.o.Names) > 0 {
		target = "pods/" + w.o.Names[0]
	}
	msg := "timed out waiting for the condition on " + target
	if !w.synced && last != nil {
		msg += fmt.Sprintf(" (%v)", last)
	}
	return errors.New(msg)
}

// event takes one watch event; errWaitDone once every target is met.
func (w *podWait) event(e api.WatchEvent) error {
	key := e.Object.Namespace + "/" + e.Object.Name
	switch e.Type {
	case api.WatchBookmark:
		if w.targets == nil {
			if err := w.choose(); err != nil {
				return err
			}
		}
		w.synced = true
	case api.WatchDeleted:
		if p := w.pods[key]; p != nil && p.UID == e.Object.UID {
			delete(w.pods, key)
		}
	default:
		p := e.Object
		w.pods[key] = &p
		w.noteDeleting(&p)
	}
	if !w.synced {
		return nil
	}
	return w.advance()
}

// noteDeleting marks the targets that p, with a deletionTimestamp, is.
func (w *podWait) noteDeleting(p *corev1.Pod) {
	if p.DeletionTimestamp == nil {
		return
	}
	for i := range w.targets {
		if t := &w.targets[i]; t.uid == p.UID && t.namespace == p.Namespace && t.name == p.Name {
			t.deleting = true
		}
	}
}

// daemonAway: err is the daemon stopping or not up yet, which a wait
// outlasts (a restart, a boot script run before podhost starts).
func daemonAway(err error) bool {
	return errors.Is(err, api.ErrDaemonDown) || errors.Is(err, api.ErrWatchClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
