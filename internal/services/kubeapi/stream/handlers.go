package stream

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// begin looks the loopback request's session up and returns the context
// its Runtime calls get: the session's, also ended with this connection.
// ok false: answered.
func (l *loopback) begin(w http.ResponseWriter, r *http.Request) (sess *session, ctx context.Context, end func(), ok bool) {
	sess, done := l.lookup(r.PathValue("token"))
	if sess == nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(sess.ctx, cancel)
	return sess, ctx, func() { stop(); cancel(); done() }, true
}

// exec is the kubelet's getExec + containerd's Exec: the container must be
// running, then remotecommand.ServeExec.
func (l *loopback) exec(w http.ResponseWriter, r *http.Request) {
	l.remoteCommand(w, r, func(sess *session) error {
		return fmt.Errorf("container not found (%q)", sess.container)
	}, func(r *http.Request, sess *session, o *remotecommand.Options) {
		remotecommand.ServeExec(w, r, executor{rt: l.s.rt, pod: sess.pod, opts: o}, sess.pod.Name, string(sess.pod.UID), sess.container, sess.cmd, o,
			l.s.opts.IdleTimeout, l.s.opts.StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	})
}

// attach is the kubelet's getAttach: the container must be running; the
// TTY is the container's (Server.Attach put it in the query).
func (l *loopback) attach(w http.ResponseWriter, r *http.Request) {
	l.remoteCommand(w, r, func(sess *session) error {
		return fmt.Errorf("container %s not found in pod %s_%s", sess.container, sess.pod.Name, sess.pod.Namespace)
	}, func(r *http.Request, sess *session, o *remotecommand.Options) {
		remotecommand.ServeAttach(w, r, attacher{rt: l.s.rt, pod: sess.pod, opts: o}, sess.pod.Name, string(sess.pod.UID), sess.container, o,
			l.s.opts.IdleTimeout, l.s.opts.StreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	})
}

// remoteCommand checks the container runs (else answers notRunning's
// error as the kubelet does), parses the kubelet's stream options and
// serves the session with r carrying the session's context.
func (l *loopback) remoteCommand(w http.ResponseWriter, r *http.Request, notRunning func(*session) error, serve func(*http.Request, *session, *remotecommand.Options)) {
	sess, ctx, end, ok := l.begin(w, r)
	if !ok {
		return
	}
	defer end()
	if !containerRunning(sess.pod, sess.container) {
		kubeletError(w, notRunning(sess))
		return
	}
	o, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	serve(r.WithContext(ctx), sess, o)
}

// portForward is the kubelet's getPortForward.
func (l *loopback) portForward(w http.ResponseWriter, r *http.Request) {
	sess, ctx, end, ok := l.begin(w, r)
	if !ok {
		return
	}
	defer end()
	// Upstream serves a port-forward until its connection closes: close it
	// when the session ends.
	if conn, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		defer context.AfterFunc(ctx, func() { conn.Close() })()
	}
	o, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fw := forwarder{rt: l.s.rt, pod: sess.pod, ctx: ctx, slots: sess.forwards, queued: l.s.forwardQueued}
	portforward.ServePortForward(w, r.WithContext(ctx), fw, sess.pod.Name, string(sess.pod.UID), o,
		l.s.opts.IdleTimeout, l.s.opts.StreamCreationTimeout, portforward.SupportedProtocols)
}

// kubeletError answers as the CRI streaming server's WriteError does for
// an error that is not NotFound or ResourceExhausted.
func kubeletError(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte(err.Error()))
}

// containerRunning: the kubelet's findContainer looks among the running
// containers of the runtime's pod; podhost's status shows them.
func containerRunning(pod *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name && cs.State.Running != nil {
				return true
			}
		}
	}
	return false
}

// containerTTY is spec.containers[].tty of the named container (any kind).
func containerTTY(pod *corev1.Pod, name string) bool {
	for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
		if c.Name == name {
			return c.TTY
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return c.TTY
		}
	}
	return false
}

// executor is remotecommand.Executor over Runtime.Exec.
type executor struct {
	rt   Runtime
	pod  *corev1.Pod
	opts *remotecommand.Options
}

// ExecInContainer reports a non-zero exit as containerd's streaming
// runtime does: a CodeExitError, which ServeExec sends as kube's
// NonZeroExitCode status (kubectl: "command terminated with exit code N").
func (e executor) ExecInContainer(ctx context.Context, _, _, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	in, out, errw = asked(e.opts, in, out, errw)
	code, err := e.rt.Exec(ctx, e.pod, container, cmd, in, out, errw, tty, sizes(ctx, resize))
	if err != nil {
		return fmt.Errorf("failed to exec in container: %w", err)
	}
	if code != 0 {
		return &utilexec.CodeExitError{Err: fmt.Errorf("error executing command %v, exit code %d", cmd, code), Code: code}
	}
	return nil
}

// attacher is remotecommand.Attacher over Runtime.Attach.
type attacher struct {
	rt   Runtime
	pod  *corev1.Pod
	opts *remotecommand.Options
}

func (a attacher) AttachContainer(ctx context.Context, _, _, container string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	in, out, errw = asked(a.opts, in, out, errw)
	return a.rt.Attach(ctx, a.pod, container, in, out, errw, tty, sizes(ctx, resize))
}

// forwarder is portforward.PortForwarder over Runtime.PortForward.
// Upstream calls it with context.Background(): ctx is the session's. A
// connection beyond the session's bound waits for a slot: an error would
// end the client's whole port-forward (kubectl's "lost connection to pod").
type forwarder struct {
	rt     Runtime
	pod    *corev1.Pod
	ctx    context.Context
	slots  chan struct{}
	queued func() // test hook: a connection waits for a slot
}

func (f forwarder) PortForward(_ context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	select {
	case f.slots <- struct{}{}:
	default:
		if f.queued != nil {
			f.queued()
		}
		select {
		case f.slots <- struct{}{}:
		case <-f.ctx.Done():
			stream.Close()
			return f.ctx.Err()
		}
	}
	defer func() { <-f.slots }()
	return f.rt.PortForward(f.ctx, f.pod, port, stream)
}

// asked drops the streams the client did not ask for: upstream's
// WebSocket (v1-v4) streams exist for every channel.
func asked(o *remotecommand.Options, in io.Reader, out, errw io.WriteCloser) (io.Reader, io.WriteCloser, io.WriteCloser) {
	if !o.Stdin {
		in = nil
	}
	if !o.Stdout {
		out = nil
	}
	if !o.Stderr {
		errw = nil
	}
	return in, out, errw
}

// sizes passes upstream's terminal sizes on as TerminalSize; it closes
// when upstream's channel does.
func sizes(ctx context.Context, in <-chan remotecommand.TerminalSize) <-chan TerminalSize {
	if in == nil {
		return nil
	}
	out := make(chan TerminalSize)
	go func() {
		defer close(out)
		for sz := range in {
			select {
			case out <- TerminalSize{Width: sz.Width, Height: sz.Height}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
