package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podhost/podhost/internal/clients/cmdutil"
	"github.com/podhost/podhost/internal/model/podview"
	"github.com/podhost/podhost/internal/services/api"
)

// waitPoll is how often `apply --wait` asks the daemon.
const waitPoll = 100 * time.Millisecond

// ReadyOptions select pods to wait for.
type ReadyOptions struct {
	Socket  string
	Timeout time.Duration
	// UIDs are the pods (by UID) to wait for: a changed manifest gives a new
	// UID, so the old pod's status never satisfies the wait.
	UIDs map[types.UID]string // uid → name, for messages
}

// Ready waits until every pod runs with all containers ready, or has
// Succeeded (a finished batch pod). A Failed pod, or one stuck in an error
// state such as ErrImagePull or CrashLoopBackOff when the time is up, is
// reported with its status.
func Ready(ctx context.Context, o ReadyOptions, s cmdutil.IOStreams) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c := api.NewClient(o.Socket)
	pending := map[types.UID]string{}
	for uid, name := range o.UIDs {
		pending[uid] = name
	}
	last := map[types.UID]*corev1.Pod{}
	for {
		list, err := c.ListPods(ctx)
		if err != nil && !errors.Is(err, api.ErrDaemonDown) && ctx.Err() == nil {
			return err
		}
		if list != nil {
			for i := range list.Items {
				p := &list.Items[i]
				if _, ok := pending[p.UID]; !ok || p.DeletionTimestamp != nil {
					continue // not the applied pod: one of its UID still stopping, not yet re-admitted
				}
				last[p.UID] = p
				switch {
				case p.Status.Phase == corev1.PodFailed:
					return fmt.Errorf("pod/%s failed: %s", p.Name, podview.Status(p))
				case p.Status.Phase == corev1.PodSucceeded || isReady(p):
					fmt.Fprintf(s.Out, "pod/%s condition met\n", p.Name)
					delete(pending, p.UID)
				}
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return waitTimeoutError(pending, last, o.Timeout)
		case <-time.After(waitPoll):
		}
	}
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waitTimeoutError(pending map[types.UID]string, last map[types.UID]*corev1.Pod, timeout time.Duration) error {
	var lines []string
	for uid, name := range pending {
		st := "not seen by the daemon (is it running?)"
		if p := last[uid]; p != nil {
			st = podview.Status(p)
		}
		lines = append(lines, fmt.Sprintf("timed out after %v waiting for pod/%s: %s", timeout, name, st))
	}
	return errors.New(strings.Join(lines, "\n"))
}
