// Package lifecycle runs containers' postStart and preStop hooks (exec,
// httpGet, sleep) with the kubelet's semantics (pkg/kubelet/lifecycle
// handlers.go). It only runs a hook and reports how it went: when a hook
// runs and what its failure does to the container is the syncer's.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podhost/podhost/internal/kubelet/handler"
)

// UserAgent is sent by httpGet hooks unless a header sets one (the
// kubelet's "kube-lifecycle/<version>").
const UserAgent = "kube-lifecycle/1.37"

// Target is the container a hook acts on.
type Target struct {
	ContainerID string
	// Container gives the name (messages) and ports (named httpGet ports).
	Container *corev1.Container
	// Pod is "name_namespace(uid)", as the kubelet's messages name a pod.
	Pod string
	// Host is where an httpGet without host goes: the pod IP, or the
	// host's IP for a hostNetwork pod.
	Host string
}

// Runner runs hooks.
type Runner struct {
	exec   handler.Execer
	client *http.Client
	clock  clock.Clock
}

// NewRunner returns a Runner that runs exec hooks through exec (nil: exec
// hooks fail) and sleeps on clk (nil: the real clock).
func NewRunner(exec handler.Execer, clk clock.Clock) *Runner {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Runner{
		exec:   exec,
		client: &http.Client{Transport: handler.NewTransport(), CheckRedirect: handler.SameHostRedirects},
		clock:  clk,
	}
}

// Run runs h against t until it ends or ctx is done. On failure it returns
// the kubelet's message for it along with the error.
func (r *Runner) Run(ctx context.Context, t Target, h *corev1.LifecycleHandler) (string, error) {
	switch {
	case h.Exec != nil:
		out, err := r.runExec(ctx, t, h.Exec.Command)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, t.Container.Name, t.Pod, err, out), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := r.runHTTP(ctx, t, h.HTTPGet); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, t.Container.Name, t.Pod, err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := r.runSleep(ctx, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, t.Container.Name, t.Pod, err), err
		}
		return "", nil
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return "Cannot run handler: " + err.Error(), err
}

// runExec runs the command in the container, with no timeout of its own
// (the kubelet's): a non-zero exit fails. The command is not expanded.
func (r *Runner) runExec(ctx context.Context, t Target, cmd []string) (string, error) {
	if r.exec == nil {
		return "", errors.New("exec hooks are not supported")
	}
	out := &handler.LimitedBuffer{Max: handler.MaxOutput}
	code, err := r.exec.Exec(ctx, t.ContainerID, cmd, nil, out, out, false)
	switch {
	case err != nil:
		return out.String(), err
	case code != 0:
		return out.String(), fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), code, out.String())
	}
	return out.String(), nil
}

// runHTTP sends the GET: any response succeeds, whatever its status (the
// kubelet reads none). An HTTPS request answered in plain HTTP is sent
// again over HTTP, as the kubelet does.
func (r *Runner) runHTTP(ctx context.Context, t Target, g *corev1.HTTPGetAction) error {
	host := g.Host
	if host == "" {
		host = t.Host
	}
	if host == "" {
		return errors.New("pod has no IP")
	}
	req, err := handler.NewHTTPGetRequest(ctx, g, t.Container, host, UserAgent)
	if err != nil {
		return err
	}
	err = r.do(req)
	if err != nil && req.URL.Scheme == "https" && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		req = req.Clone(ctx)
		req.URL.Scheme = "http"
		req.Header.Del("Authorization")
		err = r.do(req)
	}
	return err
}

func (r *Runner) do(req *http.Request) error {
	res, err := r.client.Do(req)
	if err != nil {
		return err
	}
	return res.Body.Close()
}

// runSleep sleeps seconds, or fails when ctx ends first (the container is
// being stopped: the preStop's grace period ran out).
func (r *Runner) runSleep(ctx context.Context, seconds int64) error {
	select {
	case <-r.clock.After(time.Duration(seconds) * time.Second):
		return nil
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	}
}
